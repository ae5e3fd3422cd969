"""Type objects and the signature grammar (src/typesig)."""
import pickle

import numpy as np
import pytest

import numbavec
import numbavec._core as core

# name -> the NumPy dtype it must mean
NAMES = {
    "boolean": "?", "bool_": "?", "b1": "?",
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
    "i1": "i1", "i2": "i2", "i4": "i4", "i8": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
    "u1": "u1", "u2": "u2", "u4": "u4", "u8": "u8", "byte": "u1",
    "intp": np.intp, "uintp": np.uintp,
    "float32": "f4", "float64": "f8", "f4": "f4", "f8": "f8", "double": "f8",
    "complex64": "c8", "complex128": "c16", "c8": "c8", "c16": "c16",
}

# the canonical names, in TsKind order
CANONICAL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("name,dtype", NAMES.items())
def test_module_attribute_dtype(name, dtype):
    t = getattr(core, name)
    assert isinstance(t, core.Type)
    assert t.dtype == np.dtype(dtype)
    assert t.ndim == 0
    assert getattr(numbavec, name) is t


@pytest.mark.parametrize("name,dtype", [*NAMES.items(), ("bool", "?")])
def test_name_in_string(name, dtype):
    sig = core.parse_signature(f"{name}({name}, {name}[:])")
    assert sig.return_type.dtype == np.dtype(dtype)
    assert [a.dtype for a in sig.args] == [np.dtype(dtype)] * 2
    assert sig.args[1].ndim == 1


def test_scalar_types_order_and_names():
    assert [repr(t) for t in core.scalar_types] == CANONICAL
    assert [t.name for t in core.scalar_types] == CANONICAL
    assert [t.dtype for t in core.scalar_types] == [np.dtype(n) for n in CANONICAL]


def test_aliases_are_the_same_object():
    assert core.f4 is core.float32
    assert core.byte is core.uint8
    assert core.bool_ is core.boolean is core.b1
    # a parsed scalar comes back as the canonical object
    assert core.parse_signature("f4(f4)").return_type is core.float32


def test_void():
    assert repr(core.void) == "void"
    assert core.void.dtype is None
    assert core.void.ndim == 0
    assert core.void not in core.scalar_types


ARRAYS = [
    (lambda t: t[:], "float64[:]", 1, False),
    (lambda t: t[:, :], "float64[:, :]", 2, False),
    (lambda t: t[::1], "float64[::1]", 1, True),
    (lambda t: t[:, ::1], "float64[:, ::1]", 2, True),
    (lambda t: t[:, :, ::1], "float64[:, :, ::1]", 3, True),
]


@pytest.mark.parametrize("make,text,ndim,contig", ARRAYS)
def test_subscript(make, text, ndim, contig):
    t = make(core.float64)
    assert repr(t) == str(t) == t.name == text
    assert (t.ndim, t.contig) == (ndim, contig)
    assert t.dtype == np.dtype("f8")
    assert t == make(core.f8)
    assert hash(t) == hash(make(core.f8))
    assert t == core._parse_type(text)
    assert t != core.float64
    assert t != make(core.float32)


BAD_SUBSCRIPTS = [
    (lambda: core.float32[1], "':' or '::1'"),
    (lambda: core.float32[1:], "':' or '::1'"),
    (lambda: core.float32[:2], "':' or '::1'"),
    (lambda: core.float32[::2], "':' or '::1'"),
    (lambda: core.float32["x"], "':' or '::1'"),
    (lambda: core.float32[::1, :], "last dimension"),
    (lambda: core.float32[()], "no dimensions"),
    (lambda: core.void[:], "void cannot be subscripted"),
    (lambda: core.float32[:][:], "float32[:] cannot be subscripted"),
]


@pytest.mark.parametrize("make,message", BAD_SUBSCRIPTS)
def test_bad_subscript(make, message):
    with pytest.raises(TypeError, match=message.replace("[", r"\[")):
        make()


def test_call_builds_signature():
    sig = core.float32(core.float32, core.f8)
    assert isinstance(sig, core.Signature)
    assert repr(sig) == "float32(float32, float64)"
    assert sig.return_type is core.float32
    assert sig.args == (core.float32, core.float64)
    sig = core.void(core.float64[:], core.float64, "f8[:, ::1]")
    assert repr(sig) == "void(float64[:], float64, float64[:, ::1])"
    assert sig.return_type is core.void
    assert core.int32() == core.parse_signature("i4()")


@pytest.mark.parametrize("call,exc,message", [
    (lambda: core.float32(core.void), TypeError, "void is not a valid argument"),
    (lambda: core.float32(object()), TypeError, "argument 1"),  # a number is a cast
    (lambda: core.float32(core.float32, x=1), TypeError, "keyword"),
    # a helper's signature may return an array; a ufunc's may not
    (lambda: core.parse_signature(core.float64[:](core.float64)), TypeError,
     "cannot be a return type"),
    (lambda: core.parse_signatures([core.float64[:](core.float64)]), TypeError,
     "cannot be a return type"),
    (lambda: core.float32("flaot32"), ValueError, "unknown type 'flaot32'"),
    (lambda: core.float32(*[core.f4] * 33), ValueError, "at most 32"),
])
def test_bad_call(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_classes_are_not_instantiable():
    with pytest.raises(TypeError):
        core.Type()
    with pytest.raises(TypeError):
        core.Signature()
    with pytest.raises(AttributeError):
        core.float32.ndim = 1


SIGNATURES = [
    ("float32(float32, float32)", "float32(float32, float32)"),
    ("f4(f4,f4)", "float32(float32, float32)"),
    ("  f8 ( i4 , u1 , ) ", "float64(int32, uint8)"),
    ("(f4, f4)", "(float32, float32)"),
    ("()", "()"),
    ("b1()", "bool()"),
    ("c8(c16)", "complex64(complex128)"),
    ("double(byte)", "float64(uint8)"),
    ("void(f8[:], f8[:, :], f8[::1], f8[ : , : : 1 ])",
     "void(float64[:], float64[:, :], float64[::1], float64[:, ::1])"),
    ("(f8[:], f8)", "(float64[:], float64)"),
    # Numba's bare argument lists: the return type left out, as in "(f8[:], f8)"
    ("f8[:], f8, f8[:]", "(float64[:], float64, float64[:])"),
    ("int32[:], int32, int32[:],", "(int32[:], int32, int32[:])"),
    ("\tvoid(\nf4[:])\n", "void(float32[:])"),
    ("intp(uintp)", f"{np.dtype(np.intp).name}({np.dtype(np.uintp).name})"),
    ("f4(" + ", ".join(["f4"] * 32) + ")", "float32(" + ", ".join(["float32"] * 32) + ")"),
]


@pytest.mark.parametrize("text,canonical", SIGNATURES)
def test_parse_string(text, canonical):
    sig = core.parse_signature(text)
    assert repr(sig) == str(sig) == canonical
    assert core.parse_signature(repr(sig)) == sig
    assert hash(core.parse_signature(repr(sig))) == hash(sig)
    assert pickle.loads(pickle.dumps(sig)) == sig


def test_return_type_left_out():
    sig = core.parse_signature("(f4, i8)")
    assert sig.return_type is None
    assert sig.args == (core.float32, core.int64)
    assert sig != core.float32(core.float32, core.int64)


def test_signature_equality():
    assert core.parse_signature("f4(f4)") == core.float32(core.float32)
    assert core.parse_signature("f4(f4)") != core.parse_signature("f8(f4)")
    assert core.parse_signature("f4(f4)") != core.parse_signature("f4(f4, f4)")
    assert core.parse_signature("f4(f4)") != "f4(f4)"
    assert len({core.parse_signature("f4(f4)"), core.float32(core.f4)}) == 1


def test_pickle_types():
    for t in [*core.scalar_types, core.void, core.float64[:, ::1]]:
        assert pickle.loads(pickle.dumps(t)) == t
    assert pickle.loads(pickle.dumps(core.float32)) is core.float32


def test_parse_signature_objects():
    sig = core.float32(core.float32)
    assert core.parse_signature(sig) == sig
    sig = core.parse_signature((core.float32, "f8[:]", core.int32[:, ::1]))
    assert repr(sig) == "(float32, float64[:], int32[:, ::1])"
    assert sig.return_type is None
    assert core.parse_signature(()) == core.parse_signature("()")


LISTS = [
    ([], []),
    ((), []),
    ("f4(f4)", ["float32(float32)"]),
    (core.f8(core.f8), ["float64(float64)"]),
    (["f4(f4)", core.f8(core.f8), (core.i4, "i8")],
     ["float32(float32)", "float64(float64)", "(int32, int64)"]),
    (("f4(f4)", "f8(f8)"), ["float32(float32)", "float64(float64)"]),
    ((core.f4(core.f4), core.f8(core.f8)), ["float32(float32)", "float64(float64)"]),
    # a tuple of types (or bare type names) is one argument tuple
    (("f4", "f8"), ["(float32, float64)"]),
    ((core.f4, "f8[:]"), ["(float32, float64[:])"]),
    ([("f4", "f8")], ["(float32, float64)"]),
]


@pytest.mark.parametrize("obj,expected", LISTS)
def test_parse_signatures(obj, expected):
    assert [repr(s) for s in core.parse_signatures(obj)] == expected


# text, message, the part the caret must point at
STRING_ERRORS = [
    ("float32(float32, flaot32)", "unknown type 'flaot32'", "flaot32)"),
    ("float(f4)", "unknown type 'float'", "float(f4)"),
    ("f4(f4", "missing ')'", ""),
    ("f4(f4, ", "expected a type name", ""),
    ("f4(f4 f4)", "expected ',' or ')'", "f4)"),
    ("f4(,)", "expected a type name", ",)"),
    ("f4(f4) x", "unexpected text after the signature", "x"),
    ("f4(f4))", "unexpected text after the signature", ")"),
    ("f4", "missing '('", ""),
    ("f4, f4 f4", "expected ',' after an argument type", "f4"),
    ("f4, void", "void is not a valid argument type", "void"),
    ("f4 f4(f4)", "expected '('", "f4(f4)"),
    ("", "empty signature", ""),
    ("   ", "empty signature", ""),
    ("f4(f4[])", "':' or '::1'", "])"),
    ("f4(f4[1])", "':' or '::1'", "1])"),
    ("f4(f4[:2])", "':' or '::1'", "2])"),
    ("f4(f4[::2])", "':' or '::1'", "2])"),
    ("f4(f4[:", "missing ']'", ""),
    ("void(f4[::1, :])", "only on the last dimension", "::1, :])"),
    ("f4(void)", "void is not a valid argument type", "void)"),
    ("void(f4, void)", "void is not a valid argument type", "void)"),
    ("f8[:](f8)", "an array cannot be a return type", "f8[:](f8)"),
    ("void[:](f8[:])", "void cannot be an array type", "[:](f8[:])"),
    ("f4(" + ", ".join(["f4"] * 33) + ")", "more than 32 arguments", "f4)"),
    ("f4(f4[" + ", ".join([":"] * 33) + "])", "more than 32 dimensions", ":])"),
    ("f4(é4)", "expected a type name", "é4)"),
    ("f4(f4, &)", "expected a type name, found '&'", "&)"),
]


def check_caret(message, text, rest):
    """The message quotes text and its caret sits under the start of `rest`."""
    lines = message.split("\n")
    assert len(lines) == 3, message
    assert lines[1] == "    " + text
    assert lines[2].rstrip("^").strip() == ""
    assert lines[2].endswith("^")
    column = len(lines[2]) - 1 - 4
    assert text[column:] == rest


@pytest.mark.parametrize("text,message,rest", STRING_ERRORS)
def test_string_errors(text, message, rest):
    with pytest.raises(ValueError) as info:
        core.parse_signature(text)
    msg = str(info.value)
    assert msg.startswith(f"invalid signature '{text}': ")
    assert message in msg.split("\n")[0]
    assert "\ufffd" not in msg
    check_caret(msg, text, rest)
    # the same error through the list entry point
    with pytest.raises(ValueError, match="invalid signature"):
        core.parse_signatures(["f4(f4)", text])


@pytest.mark.parametrize("text,message,rest", [
    ("flaot", "unknown type 'flaot'", "flaot"),
    ("f8[:] x", "unexpected text after the type", "x"),
    ("", "empty type name", ""),
])
def test_type_string_errors(text, message, rest):
    with pytest.raises(ValueError) as info:
        core._parse_type(text)
    msg = str(info.value)
    assert msg.startswith(f"invalid type '{text}': {message}")
    check_caret(msg, text, rest)


OBJECT_ERRORS = [
    (core.float32, TypeError,
     "float32 is a type, not a signature; write float32(float32) or 'float32(float32)'"),
    (core.float64[:], TypeError, "float64[:] is a type, not a signature; write void(float64[:])"),
    (core.void, TypeError, "void is a type, not a signature"),
    (3, TypeError, "not int"),
    (None, TypeError, "not NoneType"),
    (b"f4(f4)", TypeError, "not bytes"),
    ((core.f4, 1.5), TypeError, "not float"),
    ((core.f4, core.void), ValueError, "void is not a valid argument type"),
    (("f4", "flaot"), ValueError, "invalid type 'flaot': unknown type 'flaot'"),
    (tuple([core.f4] * 33), ValueError, "at most 32 arguments"),
    ("f4(f4)\0", ValueError, "NUL"),
]


@pytest.mark.parametrize("obj,exc,message", OBJECT_ERRORS)
def test_object_errors(obj, exc, message):
    with pytest.raises(exc) as info:
        core.parse_signature(obj)
    assert message in str(info.value)
    with pytest.raises(exc):
        core.parse_signatures(obj)


@pytest.mark.parametrize("obj,exc,message", [
    ([core.float32], TypeError, "float32 is a type, not a signature"),
    (["f4(f4)", 3], TypeError, "not int"),
    (("f4(f4)", "f4"), ValueError, "missing '('"),
    (("f4(f4)", core.f4), TypeError, "is a type, not a signature"),
    ({"f4(f4)"}, TypeError, "not set"),
])
def test_list_errors(obj, exc, message):
    with pytest.raises(exc, match=message.replace("(", r"\(")):
        core.parse_signatures(obj)


@pytest.mark.parametrize("name, value", [
    ("float32", np.False_), ("float32", 1.5), ("int8", 100.7), ("uint16", 7),
    ("bool_", 2), ("complex64", 1.5), ("float64", np.int64(3)),
])
def test_a_type_called_on_a_value_is_numpy_s_cast(name, value):
    """numbavec.float32(x) is a cast in a kernel (np.float32(x)); in Python it
    made a signature and raised for a value, so py_func disagreed with the
    kernel (the kernel fuzzer found it).  Numba's types cast the same way."""
    got = getattr(numbavec, name)(value)
    expected = getattr(np, name)(value)
    assert type(got) is type(expected) and got == expected


def test_a_type_called_on_an_array_casts_it():
    got = numbavec.float32(np.arange(3))
    assert got.dtype == np.float32 and got.tolist() == [0.0, 1.0, 2.0]


def test_a_type_called_on_types_is_still_a_signature():
    assert str(numbavec.float32(numbavec.float32, "f8")) == "float32(float32, float64)"
    assert str(numbavec.float32()) == "float32()"


def test_a_helpers_signature_may_return_an_array():
    sig = core.float64[:](core.float64[:, :])
    assert repr(sig) == "float64[:](float64[:, :])"
    parsed = core._parse_helper_signatures(["f8[:](f8[:])", sig])
    assert [str(s) for s in parsed] == ["float64[:](float64[:])", "float64[:](float64[:, :])"]
    with pytest.raises(ValueError, match="an array cannot be a return type"):
        core.parse_signatures(["f8[:](f8[:])"])
