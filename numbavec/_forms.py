"""Statements the kernel language takes in another spelling.

The compiler's lowering (src/compiler/lowerstmt.c) asks here before it lowers
a statement that is a call of a NumPy ufunc with an output argument, as
Numba-written kernels write them::

    np.exp(a, out)              ->  out[...] = np.exp(a)
    np.add(a, b, out=res)       ->  res[...] = np.add(a, b)
    np.sqrt(a, out=(res,))      ->  res[...] = np.sqrt(a)

The assignment broadcasts the result into the output and casts it to the
output's type as an assignment does (NumPy's own call would refuse a cast
that is not 'same_kind', such as float results into an int array).  The
returned nodes keep the statement's source positions, so that errors point
at what the user wrote.
"""
import ast


def ufunc_out_assignment(stmt, call, ufunc):
    """The ``ast.Assign`` that stands for the statement ``stmt``, a call of
    ``ufunc`` (``call``, an ``ast.Call``) that names its output; None when
    the call names none; a str, the message of a TypingError, when the call
    cannot be taken."""
    nin, nout = getattr(ufunc, "nin", None), getattr(ufunc, "nout", None)
    if not isinstance(nin, int) or nout != 1:
        return None
    name = getattr(ufunc, "__name__", "ufunc")
    args = list(call.args)
    outs = [kw for kw in call.keywords if kw.arg == "out"]
    others = [kw.arg or "**" for kw in call.keywords if kw.arg != "out"]
    if any(isinstance(a, ast.Starred) for a in args):
        return None
    if len(args) == nin + 1 and not outs:
        out = args.pop()
    elif len(args) == nin and len(outs) == 1:
        out = outs[0].value
        if isinstance(out, ast.Tuple) and len(out.elts) == 1:
            out = out.elts[0]
    elif len(args) > nin and outs:
        return f"np.{name}() got its output both as an argument and as out="
    else:
        return None
    if others:
        return (f"np.{name}(..., out=) takes no other keyword in a kernel "
                f"(got {', '.join(others)}=)")
    target = ast.copy_location(
        ast.Subscript(value=out, slice=ast.copy_location(ast.Constant(value=...), out),
                      ctx=ast.Store()), out)
    value = ast.copy_location(ast.Call(func=call.func, args=args, keywords=[]), call)
    return ast.copy_location(ast.Assign(targets=[target], value=value), stmt)
