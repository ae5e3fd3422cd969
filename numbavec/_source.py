"""Getting a kernel's source and AST: the one step of compilation done in Python.

``inspect`` and ``ast`` are the stable, version-independent way to read a
function (bytecode is not), so the decorator parses the function's own source
here and hands the ``ast.FunctionDef`` to the C compiler, with what it needs
to point at a line in an error message.
"""
import ast
import inspect
import linecache
import textwrap


class KernelSource:
    """The parsed source of one Python function.

    ``funcdef`` is an ``ast.FunctionDef`` (a lambda is turned into one);
    ``location`` is the tuple ``_core.vectorize`` takes:
    ``(filename, first_line, lines, line_offset)``, where a node's file line is
    ``node.lineno + line_offset`` and ``lines[0]`` is file line ``first_line``.
    """

    __slots__ = ("funcdef", "location")

    def __init__(self, pyfunc):
        if _from_module_tree(self, pyfunc):
            return
        try:
            lines, first_line = inspect.getsourcelines(pyfunc)
        except (OSError, TypeError) as exc:
            raise TypeError(
                f"cannot read the source of {pyfunc!r}: numbavec compiles a kernel from "
                f"its source, so define it in a file (or register the source with linecache)"
            ) from exc
        filename = inspect.getsourcefile(pyfunc) or pyfunc.__code__.co_filename
        source = "".join(lines)
        offset = first_line - 1
        if source[:1] in (" ", "\t"):
            # an indented def (a method, a def inside a function): parsing it
            # under "if 1:" keeps every column exact, unlike dedenting
            source = "if 1:\n" + source
            offset -= 1
        try:
            tree = ast.parse(source, filename)
        except SyntaxError:
            tree = ast.parse(textwrap.dedent("".join(lines)), filename)
            offset = first_line - 1
        self.funcdef = _find_function(tree, pyfunc)
        self.location = (filename, first_line, list(lines), offset)


# {filename: (the file's lines, {first line: FunctionDef})}: one parse per file
_module_trees = {}


def _from_module_tree(self, pyfunc):
    """The fast path for a def in a file: parse the whole file once (cached)
    and pick the def starting at the code's first line, instead of letting
    inspect tokenize each function (the bulk of a warm-cache import).
    False when it does not apply (lambdas, no file): inspect then decides."""
    code = pyfunc.__code__
    filename = code.co_filename
    if pyfunc.__name__ == "<lambda>" or filename.startswith("<"):
        return False
    linecache.checkcache(filename)      # as inspect does: a file edited since
    lines = linecache.getlines(filename, pyfunc.__globals__)
    if not lines:
        return False
    cached = _module_trees.get(filename)
    if cached is None or cached[0] is not lines:
        try:
            tree = ast.parse("".join(lines), filename)
        except (SyntaxError, ValueError):
            return False
        defs = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                defs[first] = node
        cached = _module_trees[filename] = (lines, defs)
    node = cached[1].get(code.co_firstlineno)
    if node is None or node.name != pyfunc.__name__ or node.end_lineno is None:
        return False
    first = code.co_firstlineno
    own = list(lines[first - 1:node.end_lineno])
    self.funcdef = node
    self.location = (filename, first, own, 0)
    return True


def _find_function(tree, pyfunc):
    name = pyfunc.__name__
    params = list(pyfunc.__code__.co_varnames[: pyfunc.__code__.co_argcount])
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    if name == "<lambda>":
        for node in ast.walk(tree):
            if isinstance(node, ast.Lambda) and [a.arg for a in node.args.args] == params:
                ret = ast.copy_location(ast.Return(value=node.body), node.body)
                fdef = ast.FunctionDef(name=name, args=node.args, body=[ret],
                                       decorator_list=[], returns=None, type_comment=None)
                if hasattr(ast.FunctionDef, "type_params") or "type_params" in ast.FunctionDef._fields:
                    fdef.type_params = []
                return ast.copy_location(fdef, node)
    raise TypeError(f"cannot find the definition of {name!r} in its source")


def names_by_line(funcdef, line_offset):
    """{file line: [names assigned or bound there]}, parameters included."""
    out = {}
    for a in funcdef.args.posonlyargs + funcdef.args.args:
        out.setdefault(a.lineno + line_offset, []).append(a.arg)
    for node in ast.walk(funcdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names = out.setdefault(node.lineno + line_offset, [])
            if node.id not in names:
                names.append(node.id)
    return out
