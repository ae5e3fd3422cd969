"""Compile records: what each compilation took, as figures a program can read.

The compiler times every compilation in stages (the figures
``NUMBAVEC_DUMP=time`` prints) and hands each record here
(src/compiler/driver.c, ``_record``).  A record is made

- per compiled signature (``kind == "signature"``): lowering, typing and
  emitting the LLVM IR, and, when the machine code is made at once
  (``cache=True``, ``NUMBAVEC_EAGER=1``, cuda), optimisation, code
  generation and linking too; ``cache_hit`` when its code came from the
  cache, ``deferred`` when its machine code waits for the first call;
- per machine-code build at a call (``kind == "machine code"`` or
  ``"quick machine code"``, the unoptimised code a signature's first calls
  run): optimisation, code generation and linking.

Each record goes, in the compiling thread, to

- the object that compiled it: ``f.stats``, a read-only sequence of its
  records in the order they were made;
- the ``numbavec`` logger, one INFO message each (the record itself as the
  log record's ``numbavec`` attribute);
- the listeners of :func:`add_listener` (and :func:`listening`,
  :func:`recording`), for tools that draw timelines: ``start`` is on
  ``time.monotonic()``'s clock, ``thread`` is ``threading.get_ident()``.

Figures are in seconds.  A listener must not compile or call numbavec
objects (it may run inside NumPy's dispatch); an exception it raises is
reported as unraisable and compilation goes on.
"""
import _thread
import contextlib
import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

# logging is imported by whoever configures it: until then a record has no
# handler to reach, and numbavec's import does not pay for logging
__all__ = ["CompileRecord", "Stats", "add_listener", "remove_listener", "listening",
           "recording", "logger"]
_INFO = 20


def __getattr__(name: str) -> Any:
    if name == "logger":        # numbavec.events.logger: logging.getLogger("numbavec")
        import logging

        return logging.getLogger("numbavec")
    raise AttributeError(f"module 'numbavec.events' has no attribute {name!r}")

_STAGES = ("lower", "type", "emit", "opt", "codegen", "link")
_KINDS = {"machine code made": "machine code", "quick machine code made": "quick machine code"}


class CompileRecord(NamedTuple):
    """One compilation's figures (seconds); immutable."""

    kind: str            # "signature", "machine code" or "quick machine code"
    qualname: str        # the kernel's __qualname__
    module: str          # and its __module__
    signature: str       # as numbavec spells it: 'float64(float64, float64)'
    target: str | None   # 'cpu', 'parallel', 'cuda' (None: not known)
    stages: dict[str, float]  # {stage: seconds}, stages in the order they ran
    total: float         # seconds, from start to the end of the record
    start: float         # on time.monotonic()'s clock
    cache_hit: bool      # the code came from the cache (cache=True)
    deferred: bool       # a signature whose machine code waits for its first call
    thread: int          # threading.get_ident() of the compiling thread

    def __str__(self) -> str:
        stages = ", ".join(f"{name} {sec * 1e3:.2f}" for name, sec in self.stages.items())
        if self.kind == "signature":
            done = "loaded from the cache" if self.cache_hit else "compiled"
            tail = "; machine code at the first call" if self.deferred else ""
        else:
            done, tail = f"made the {self.kind} of", ""
        return (f"{done} {self.module}.{self.qualname} {self.signature} "
                f"for {self.target} in {self.total * 1e3:.2f} ms ({stages} ms{tail})")


class Stats:
    """``f.stats``: the CompileRecords of one object, oldest first (a
    read-only, live sequence: records made later appear in it)."""

    __slots__ = ("_records",)

    def __init__(self, records: list[CompileRecord]) -> None:
        self._records = records

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, i: int) -> CompileRecord:
        return self._records[i]

    def __iter__(self) -> Iterator[CompileRecord]:
        return iter(list(self._records))

    def __repr__(self) -> str:
        return f"<numbavec stats: {len(self._records)} records>\n" + "\n".join(
            str(r) for r in self._records)

    @property
    def total(self) -> float:
        """The seconds of all its records together."""
        return sum(r.total for r in self._records)


# Origin -> its list of records (the object's Stats reads it)
_by_origin: "weakref.WeakKeyDictionary[Any, list[CompileRecord]]" = weakref.WeakKeyDictionary()
# id of a CcCode whose machine code waits -> (weakref to Origin or None,
# qualname, module, signature, target), from its signature's record
_waiting: dict[int, Any] = {}
_listeners: list[Callable[[CompileRecord], object]] = []
_lock = _thread.allocate_lock()


def records_of(origin: Any) -> list[CompileRecord]:
    """The list of records of an Origin (made at its first use)."""
    with _lock:
        records = _by_origin.get(origin)
        if records is None:
            records = _by_origin[origin] = []
        return records


def _target_of(origin: Any) -> str:
    target = origin.recipe_.kwargs.get("target", "cpu")
    return "cuda" if target == "gpu" else target


def _describe(name: str, origin: Any, code: int, signature: str | None, kind: str,
              lazy: int) -> Any:
    """(origin ref, qualname, module, signature, target) of a record."""
    if kind == "signature":
        if origin is None:
            return None, name, "?", signature, None
        return (weakref.ref(origin), origin.qualname, origin.module, signature,
                _target_of(origin))
    with _lock:
        found = _waiting.get(code) if kind == "quick machine code" else _waiting.pop(code, None)
    if found is None or found[0] is None or found[0]() is None:
        return None, name, "?", "?", None
    return found


def _record(what: str, name: str, origin: Any, code: int, signature: str | None,
            where: str | None, stages_ns: tuple[float, ...], t0_ns: float, total_ns: float,
            lazy: int, hit: int) -> None:
    """What src/compiler/driver.c calls after each compilation (what:
    "signature", "machine code made" or "quick machine code made")."""
    kind = _KINDS.get(what, what)
    ref, qualname, module, signature, target = _describe(name, origin, code, signature, kind,
                                                         lazy)
    first = 0 if kind == "signature" else 3
    stages = {_STAGES[i]: stages_ns[i] / 1e9 for i in range(first, len(_STAGES))
              if kind != "signature" or stages_ns[i] or i < 3}
    record = CompileRecord(kind, qualname, module, signature, target, stages, total_ns / 1e9,
                           t0_ns / 1e9, bool(hit), bool(lazy), _thread.get_ident())
    if kind == "signature" and lazy and code:
        with _lock:
            _waiting[code] = (ref, qualname, module, signature, target)
    owner = ref() if ref is not None else None
    if owner is not None:
        records_of(owner).append(record)
    logging = sys.modules.get("logging")
    if logging is not None:
        logger = logging.getLogger("numbavec")
        if logger.isEnabledFor(_INFO):
            logger.info("%s", record, extra={"numbavec": record})
    _tell_listeners(record)


def _tell_listeners(record: CompileRecord) -> None:
    failed: Exception | None = None
    for listener in list(_listeners):
        try:
            listener(record)
        except Exception as exc:  # noqa: BLE001 - the first is raised after all ran
            failed = failed or exc
    if failed is not None:
        raise failed


def add_listener(listener: Callable[[CompileRecord], object]) -> None:
    """Call ``listener(record)`` with every CompileRecord from now on."""
    with _lock:
        _listeners.append(listener)


def remove_listener(listener: Callable[[CompileRecord], object]) -> None:
    """Stop calling a listener added by add_listener (ValueError if absent)."""
    with _lock:
        _listeners.remove(listener)


@contextlib.contextmanager
def listening(listener: Callable[[CompileRecord], object]
              ) -> Iterator[Callable[[CompileRecord], object]]:
    """``with listening(fn):`` calls fn with every record made inside."""
    add_listener(listener)
    try:
        yield listener
    finally:
        remove_listener(listener)


@contextlib.contextmanager
def recording() -> Iterator[list[CompileRecord]]:
    """``with recording() as records:`` collects every record made inside
    into the list ``records`` (as numba.core.event.install_recorder)."""
    records: list[CompileRecord] = []
    with listening(records.append):
        yield records
