"""Compile records (numbavec/events.py): one per compiled signature and per
machine-code build, on the object (``f.stats``), the ``numbavec`` logger and
the listeners.  Figures are only checked to be there and consistent, never
against a time."""
import logging
import os

import numpy as np
import pytest

import numbavec
from numbavec import events, guvectorize, vectorize

from conftest import run_python

STAGES = ["lower", "type", "emit"]
MADE = ["opt", "codegen", "link"]


def check_figures(record):
    assert all(sec >= 0 for sec in record.stages.values()), record
    assert record.total >= sum(record.stages.values()) * 0.999, record
    assert record.start > 0 and record.thread > 0


def test_an_eager_ufunc_records_each_signature_on_every_channel(target, caplog):
    def scaled(x, y):
        return x * 2 + y

    with events.recording() as records, caplog.at_level(logging.INFO, logger="numbavec"):
        u = vectorize(["f8(f8, f8)", "i8(i8, i8)"], target=target)(scaled)
    x = np.arange(5.0)
    np.testing.assert_array_equal(u(x, x), scaled(x, x))
    sigs = [r for r in records if r.kind == "signature"]
    assert [r.signature for r in sigs] == ["float64(float64, float64)", "int64(int64, int64)"]
    for r in sigs:
        assert r.qualname == scaled.__qualname__ and r.module == __name__
        assert r.target == target and not r.cache_hit
        assert list(r.stages)[:3] == STAGES
        check_figures(r)
    # the object holds the same records, in order, and more after its call
    assert list(u.stats)[:2] == sigs
    logged = [rec.numbavec for rec in caplog.records if hasattr(rec, "numbavec")]
    assert logged == records
    assert f"{__name__}.{scaled.__qualname__} float64(float64, float64) for {target}" \
        in caplog.records[0].getMessage()


def test_machine_code_made_at_a_call_is_recorded_on_its_object(monkeypatch):
    """A lazy signature's machine code waits for its first call: the quick
    code made then, and the optimised code once the calls ran enough
    elements, each a record naming the signature."""
    def cube(x):
        return x * x * x

    u = vectorize(target="cpu")(cube)
    assert len(u.stats) == 0
    with events.recording() as records:
        small = u(np.arange(4.0))
        large = u(np.ones(70_000))
    np.testing.assert_array_equal(small, cube(np.arange(4.0)))
    assert large.sum() == 70_000
    kinds = [r.kind for r in records]
    if os.environ.get("NUMBAVEC_QUICK") == "0" or os.environ.get("NUMBAVEC_EAGER") == "1":
        assert "signature" in kinds
    else:
        assert kinds == ["signature", "quick machine code", "machine code"]
        assert records[0].deferred
        for r in records[1:]:
            assert list(r.stages) == MADE and r.signature == "float64(float64)"
            assert r.qualname == cube.__qualname__ and r.target == "cpu"
            check_figures(r)
    assert list(u.stats) == records
    assert u.stats.total == pytest.approx(sum(r.total for r in records))


def test_a_gufunc_records_its_signatures_and_target(target):
    @guvectorize(["void(f8[:], f8[:])"], "(n)->()", target=target)
    def total(x, res):
        acc = 0.0
        for v in x:
            acc += v
        res[0] = acc

    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(total(a), a.sum(axis=1))
    first = total.stats[0]
    assert first.kind == "signature" and first.signature == "void(float64[:], float64[:])"
    assert first.target == target and first.qualname.endswith("<locals>.total")


def test_a_listener_that_raises_leaves_the_compilation_alone(monkeypatch):
    seen = []

    def broken(record):
        raise RuntimeError("listener bug")

    monkeypatch.setattr("sys.unraisablehook", lambda u: seen.append(u.exc_value))
    with events.listening(broken), events.recording() as records:
        u = vectorize(["f8(f8)"])(lambda x: x + 1)
    np.testing.assert_array_equal(u(np.arange(3.0)), [1, 2, 3])
    assert [type(e) for e in seen] == [RuntimeError]
    assert len(records) == 1     # the listeners after it were still told
    assert events._listeners == []


def test_cache_hits_are_recorded(tmp_path):
    code = ("import numpy as np, numbavec\n"
            "from numbavec import events\n"
            "def f(x):\n"
            "    return x * 3 + 1\n"
            "with events.recording() as records:\n"
            "    u = numbavec.vectorize(['f8(f8)'], cache=True)(f)\n"
            "print(u(np.arange(3.0)).tolist())\n"
            "print([(r.kind, r.cache_hit) for r in u.stats])\n")
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(tmp_path / "cache"))
    outs = []
    for _ in range(2):
        r = run_python(code, env=env)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout.splitlines())
    assert outs[0][0] == outs[1][0] == "[1.0, 4.0, 7.0]"
    # cold: compiled, its machine code made (and stored) at once; warm:
    # loaded, no LLVM pass
    assert outs[0][1] == "[('signature', False), ('machine code', False)]"
    assert outs[1][1] == "[('signature', True)]"


def test_the_logger_is_quiet_unless_configured():
    r = run_python("import numbavec, numpy as np\n"
                   "u = numbavec.vectorize(['f8(f8)'])(lambda x: x + 1)\n"
                   "print(u(np.ones(2)).tolist())\n")
    assert r.returncode == 0 and r.stdout == "[2.0, 2.0]\n" and r.stderr == ""
    r = run_python("import logging, numbavec, numpy as np\n"
                   "logging.basicConfig(level=logging.INFO, format='%(name)s %(message)s')\n"
                   "u = numbavec.vectorize(['f8(f8)'])(lambda x: x + 1)\n"
                   "print(u(np.ones(2)).tolist())\n", env=dict(os.environ, NUMBAVEC_QUICK="1"))
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("numbavec compiled __main__.<lambda> float64(float64) for cpu in ")
    assert "quick machine code of __main__.<lambda> float64(float64)" in lines[1]


def test_stats_is_documented_and_read_only():
    u = vectorize(["f8(f8)"])(lambda x: x)
    with pytest.raises(TypeError):
        u.stats[0] = None
    assert "f.stats" in events.__doc__ and isinstance(u.stats, events.Stats)
    assert numbavec.events is events


def test_importing_numbavec_imports_no_logging_and_no_threadpoolctl():
    """The records and the threadpoolctl controller cost numbavec's import
    nothing: logging is used where someone configured it (and so imported
    it), threadpoolctl where it is imported."""
    r = run_python("import sys, numbavec\n"
                   "print([m for m in ('logging', 'threadpoolctl', 'importlib.abc', "
                   "'dataclasses') if m in sys.modules])")
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr
