"""Statements the kernel language takes in another spelling, and the scope
of a function's names.

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

``f = lambda v: expr`` in a kernel is ``def f(v): return expr``
(lambda_as_def), a function nested in it, which the compiler inlines where
it is called (src/compiler/inline.c); scope_nodes gives the nodes whose
stored names are a function's locals, not those of the functions nested in
it (src/compiler/lower.c).
"""
import ast
from collections import deque

_NEW_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


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


def scope_nodes(funcdef):
    """The nodes of a function's own scope, as ``ast.walk`` gives them, but
    not the insides of the functions, lambdas and classes nested in it (their
    names are theirs); the nested def itself, and its defaults, are kept."""
    todo = deque([funcdef])
    while todo:
        node = todo.popleft()
        yield node
        if node is not funcdef and isinstance(node, _NEW_SCOPES):
            args = getattr(node, "args", None)
            if isinstance(args, ast.arguments):
                todo.extend(d for d in args.defaults + args.kw_defaults if d is not None)
            todo.extend(getattr(node, "decorator_list", ()))
            continue
        todo.extend(ast.iter_child_nodes(node))


def lambda_as_def(name, node):
    """``name = lambda args: expr`` as the ``ast.FunctionDef`` it stands for
    (``def name(args): return expr``), at the lambda's place in the source."""
    ret = ast.copy_location(ast.Return(value=node.body), node.body)
    funcdef = ast.FunctionDef(name=name, args=node.args, body=[ret], decorator_list=[],
                              returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        funcdef.type_params = []
    return ast.copy_location(funcdef, node)
