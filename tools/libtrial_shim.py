"""The recording shim that tools/try_libraries.py switches a library's decorators to.

A copy of a Numba-written library is rewritten so that its ``vectorize`` and
``guvectorize`` (and, in the ``all`` phase, ``jit`` and ``njit``) come from
this module instead of Numba; nothing else in the copy changes.  Each
decorator here records one kernel (package, module, qualname, signatures,
layout, options, how long decorating took and how it ended) and returns what
the library then uses:

- phase ``numba`` (the reference): Numba's own decorator, unchanged; a Numba
  error propagates, as it would in the published library.
- phases ``ufuncs`` and ``all`` (the trial): numbavec's decorator; when it
  raises, the error's type and first line are recorded and Numba's decorator
  is used instead, so that the import goes on and every kernel is counted
  rather than only the first failing one.

The phase comes from the environment (LIBTRIAL_PHASE).  Kernels named in
LIBTRIAL_SKIP (one key a line, written by the parent after a crash) are not
given to numbavec.  Before numbavec compiles anything, the key is written to
LIBTRIAL_PROGRESS, so that the parent can tell which kernel a crash hit.

Not a part of numbavec: a measuring aid, see tools/README.md.
"""
import contextlib
import inspect
import os
import time

PHASE = os.environ.get("LIBTRIAL_PHASE", "numba")
_SKIP = set(filter(None, os.environ.get("LIBTRIAL_SKIP", "").split("\n")))
_PROGRESS = os.environ.get("LIBTRIAL_PROGRESS")

# key -> record (a dict; "object" holds what the decorator made)
KERNELS = {}
# (id of the module's globals, base key) -> how many kernels of that base key
# this execution of the module made: the same function decorated twice in one
# module (quantecon's _probvec, cpu and parallel) gets two keys, while a module
# executed again (a package __init__ that failed half-way) gets the same ones.
_SEEN = {}
_label = None


@contextlib.contextmanager
def labelled(label):
    """Name the kernels made inside the block (numbagg makes all of its
    gufuncs in one method, from functions whose names say nothing)."""
    global _label
    saved, _label = _label, label
    try:
        yield
    finally:
        _label = saved


def progress(what):
    """Say what is about to run, for the parent to read after a crash."""
    if _PROGRESS:
        with open(_PROGRESS, "w") as f:
            f.write(what)


def _key(func):
    module = getattr(func, "__module__", None) or "?"
    qualname = _label or getattr(func, "__qualname__", None) or repr(func)
    base = f"{module}:{qualname}"
    counter = (id(getattr(func, "__globals__", None)), base)
    n = _SEEN[counter] = _SEEN.get(counter, 0) + 1
    return (base if n == 1 else f"{base}#{n}"), module, qualname


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _signature_text(sig, kind):
    if isinstance(sig, str):
        return sig
    try:
        return numba_signature_text(sig, kind)
    except Exception:
        return str(sig)


def _python_function(func):
    return getattr(func, "py_func", func)


def _numba(kind):
    import numba
    return getattr(numba, kind)


def _numbavec(kind):
    import numbavec
    return getattr(numbavec, "jit" if kind == "njit" else kind)


class _Decorator:
    """One use of a switched decorator: the arguments it was given, applied
    to a function when the library calls it with one."""

    def __init__(self, kind, args, kwargs):
        self.kind, self.args, self.kwargs = kind, args, kwargs

    def __call__(self, func):
        key, module, qualname = _key(_python_function(func))
        rec = {"key": key, "kind": self.kind, "module": module, "qualname": qualname,
               "label": _label, "phase": PHASE, "options": _options_text(self.kwargs),
               **_signatures_of(self.kind, self.args, self.kwargs),
               "ok": None, "error_type": None, "error": None, "error_text": None,
               "decorate_s": None, "object": None, "python_function": _python_function(func),
               "decorator": (self.kind, self.args, self.kwargs), "given": func}
        KERNELS[key] = rec
        switched = PHASE == "all" or (PHASE == "ufuncs" and self.kind in ("vectorize",
                                                                          "guvectorize"))
        if not switched:
            try:
                return self._apply(rec, _numba(self.kind), func)
            except Exception as exc:        # the library fails here as published
                rec.update(ok=False, error_type=type(exc).__name__, error=_first_line(exc),
                           error_text=str(exc))
                raise
        if key in _SKIP:
            rec.update(ok=False, error_type="Crash", error="the process died compiling it "
                       "(skipped on the rerun)", error_text="")
            return self._fallback(func)
        progress(f"decorate {key}")
        try:
            obj = self._apply(rec, _numbavec(self.kind), func)
        except Exception as exc:            # recorded; the import goes on with Numba's
            rec.update(ok=False, error_type=type(exc).__name__, error=_first_line(exc),
                       error_text=str(exc), object=None)
            self._retry_as_text(rec, func)
            return self._fallback(func)
        finally:
            progress("")
        return obj

    def _retry_as_text(self, rec, func):
        """Where the signatures were Numba's type objects (numbagg builds
        them so), compile again with the same signatures written as text, to
        see past that first error; the kernel still counts as failed as is,
        and the retried object is the one called and compared."""
        sigs = rec["signature_objects"]
        if not sigs or all(isinstance(s, str) for s in sigs):
            return
        try:
            text = [numba_signature_text(s, self.kind) for s in sigs]
        except Exception:
            return
        if not self.args:                    # signatures are always the first argument
            return
        args = [text, *self.args[1:]]
        retry = {"signatures_as_text": text}
        try:
            start = time.perf_counter()
            obj = _numbavec(self.kind)(*args, **self.kwargs)(func)
            retry.update(ok=True, decorate_s=time.perf_counter() - start)
            rec["object"] = obj
        except Exception as exc:
            retry.update(ok=False, error_type=type(exc).__name__, error=_first_line(exc),
                         error_text=str(exc))
        rec["retry"] = retry

    def _apply(self, rec, decorator, func):
        start = time.perf_counter()
        obj = decorator(*self.args, **self.kwargs)(func) if self.args or self.kwargs \
            else decorator(func)
        rec.update(ok=True, decorate_s=time.perf_counter() - start, object=obj)
        return obj

    def _fallback(self, func):
        """Numba's decorator, so that the library goes on importing; the
        function itself where Numba fails too (its helpers switched)."""
        try:
            return _numba(self.kind)(*self.args, **self.kwargs)(func) \
                if self.args or self.kwargs else _numba(self.kind)(func)
        except Exception:
            return func


def numba_signature_text(sig, kind):
    """A signature given as Numba's type objects, in numbavec's text form
    ('void(float64[:], int64, float64[:, ::1])')."""
    from numba.core import sigutils, types as nt
    args, ret = sigutils.normalize_signature(sig)

    def one(t):
        if isinstance(t, nt.Array):
            dims = [":"] * t.ndim
            if t.layout == "C" and dims:
                dims[-1] = "::1"
            return f"{one(t.dtype)}[{', '.join(dims)}]"
        return "boolean" if str(t) == "bool" else str(t)

    listed = ", ".join(one(a) for a in args)
    if kind == "guvectorize" or ret == nt.none:
        return f"void({listed})"
    return f"{one(ret)}({listed})" if ret is not None else f"({listed})"


def numba_twin(rec):
    """Numba's decorator applied as the library applied the switched one:
    the same function, the same arguments (to time both in one process)."""
    kind, args, kwargs = rec["decorator"]
    return _numba(kind)(*args, **kwargs)(rec["given"]) if args or kwargs \
        else _numba(kind)(rec["given"])


# what the shim's records hold that only this process can use
UNSAVED = ("object", "python_function", "signature_objects", "decorator", "given")


def _options_text(kwargs):
    return {k: (v if isinstance(v, (bool, int, float, str, type(None))) else repr(v))
            for k, v in kwargs.items()}


def _signatures_of(kind, args, kwargs):
    """Signatures (as text, and as given) and the layout, from a decorator's
    arguments in every form Numba takes."""
    sigs, layout = (), None
    if kind == "guvectorize":
        if "layout" in kwargs:
            layout = kwargs["layout"]
            sigs = args[0] if args else ()
        elif len(args) == 1:
            layout = args[0]                     # a layout alone: a dynamic gufunc
        elif len(args) >= 2:
            sigs, layout = args[0], args[1]
    elif args:
        sigs = args[0]
    if isinstance(sigs, (str, tuple)) or not isinstance(sigs, (list,)):
        sigs = [sigs] if sigs not in ((), None) and not callable(sigs) else []
    return {"signatures": [_signature_text(s, kind) for s in sigs], "signature_objects": list(sigs),
            "layout": layout}


def _make(kind):
    def decorator(*args, **kwargs):
        if len(args) == 1 and not kwargs and inspect.isfunction(_python_function(args[0])) \
                and kind != "guvectorize":
            return _Decorator(kind, (), {})(args[0])       # bare @vectorize / @jit
        return _Decorator(kind, args, kwargs)
    decorator.__name__ = kind
    decorator.__doc__ = f"The recording stand-in for {kind} (see the module's docstring)."
    return decorator


vectorize = _make("vectorize")
guvectorize = _make("guvectorize")
jit = _make("jit")
njit = _make("njit")
