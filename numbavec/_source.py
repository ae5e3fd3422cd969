"""Getting a kernel's source and AST: the one step of compilation done in Python.

``inspect`` and ``ast`` are the stable, version-independent way to read a
function, so the decorator parses the function's own source here and hands
the ``ast.FunctionDef`` to the C compiler, with what it needs to point at a
line in an error message.

Where there is no source (``python -c``, ``exec``, a REPL, a ``.pyc``-only
module, a function compiled from a rewritten tree), or the source found is
not the one the function was compiled from (its file edited since, a
``compile()`` whose file name points at other text), the FunctionDef is
rebuilt from the function's code object instead (numbavec/_bytecode.py).
Which applies is decided by compiling the found source's def again and
comparing its code with the function's, never by trusting the file.
"""
import ast
import inspect
import linecache
import sys
import textwrap

from numbavec import _bytecode, _core


class KernelSource:
    """The parsed source of one Python function.

    ``funcdef`` is an ``ast.FunctionDef`` (a lambda is turned into one);
    ``location`` is the tuple ``_core.vectorize`` takes:
    ``(filename, first_line, lines, line_offset)``, where a node's file line is
    ``node.lineno + line_offset`` and ``lines[0]`` is file line ``first_line``.
    """

    __slots__ = ("funcdef", "location", "from_bytecode")

    def __init__(self, pyfunc, file_lines=None):
        """file_lines: the lines of pyfunc's file as they were when it was
        defined (file_lines_of), else the file is read as it is now."""
        if not inspect.isfunction(pyfunc):
            raise TypeError(f"numbavec compiles a Python function, not {pyfunc!r}")
        self.from_bytecode = False
        try:
            found = (_from_module_tree(self, pyfunc, file_lines)
                     or self._parse(pyfunc, file_lines))
        except _core.TypingError:
            raise
        except (OSError, TypeError, SyntaxError, ValueError, IndexError):
            found = False       # no source, or none that parses: the code says
        if not (found and _on_roomy_stack(_bytecode.source_matches, self.funcdef, pyfunc,
                                          self.location[0])):
            rebuilt = _on_roomy_stack(_bytecode.rebuild, pyfunc)
            self.funcdef, self.location = rebuilt.funcdef, rebuilt.location
            self.from_bytecode = True
        self.location = (notebook_label(self.location[0]),) + tuple(self.location[1:])

    def _parse(self, pyfunc, file_lines=None):
        """The def in the source inspect finds (OSError when there is none)."""
        if file_lines:
            first_line = pyfunc.__code__.co_firstlineno
            lines = inspect.getblock(file_lines[first_line - 1:])
        else:
            lines, first_line = inspect.getsourcelines(pyfunc)
        filename = inspect.getsourcefile(pyfunc) or pyfunc.__code__.co_filename
        source = "".join(lines)
        offset = first_line - 1
        if source[:1] in (" ", "\t"):
            # an indented def (a method, a def inside a function): parsing it
            # under "if 1:" keeps every column exact, unlike dedenting
            source = "if 1:\n" + source
            offset -= 1
        try:
            tree = _parse(source, filename, offset)
        except SyntaxError:
            offset = first_line - 1
            try:
                tree = _parse(textwrap.dedent("".join(lines)), filename, offset)
            except SyntaxError:
                if pyfunc.__name__ != "<lambda>":
                    raise
                tree = _lambda_alone(lines, filename, offset)
        self.funcdef = _find_function(tree, pyfunc, offset)
        self.location = (filename, first_line, list(lines), offset)
        return True


def notebook_label(filename):
    """A notebook cell's file (ipykernel's ``/tmp/ipykernel_<pid>/<hash>.py``,
    IPython's ``<ipython-input-...>``) as IPython's tracebacks name it,
    ``Cell In[4]``, which the compiler's errors then show as ``Cell In[4],
    line 5`` (src/compiler/diag.c); any other filename as it is."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    try:
        found = name_of(filename) if name_of is not None else None
    except Exception:  # noqa: BLE001 - a label is a nicety: the file name stays
        found = None
    return f"{found[0]} {found[1]}" if found and found[0] == "Cell" else filename


# CPython sizes its recursion limits for a main thread's 8 MB stack.  Parsing,
# and freeing, a deeply nested tree recurses once per level in C, and on a
# thread with far less room (threading.stack_size(512 * 1024)) overflows it:
# a segfault inside CPython (3.13), where the plain function would have run.
# So on such a thread the source is parsed on a thread of _PARSE_STACK bytes,
# and its tree comes back only when it is shallow enough to be compiled, and
# freed, on the caller's stack (the compiler's own budget of levels there);
# otherwise it is freed where it was made and the kernel refused.
_ROOMY = 4 << 20
_PARSE_STACK = 16 << 20


def _roomy():
    room = _core._stack_room()
    return room is None or room >= _ROOMY


def _on_roomy_stack(fn, *args):
    """fn(*args), on a thread of _PARSE_STACK bytes when this one has little
    room: compiling a tree again and rebuilding one recurse as deep as it is."""
    if _roomy():
        return fn(*args)
    return _core._call_with_stack(_PARSE_STACK, fn, *args)


def _parse(source, filename, line_offset):
    if _roomy():
        return ast.parse(source, filename)
    return _core._call_with_stack(_PARSE_STACK, _parse_bounded, source, filename, line_offset,
                                  _core._depth_budget())


def _parse_bounded(source, filename, line_offset, budget):
    tree = ast.parse(source, filename)
    where = _deeper_than(tree, budget)
    if where is None:
        return tree
    del tree                            # freed here, on the large stack
    line, col = where
    raise _core.TypingError(
        f"{filename}:{line + line_offset}:{col + 1}: the kernel is nested too deeply for this "
        f"thread's stack (more than {budget} levels here; compile it on a thread with a "
        f"larger stack)")


def _deeper_than(tree, budget):
    """(line, column) of a node nested more than budget levels deep in tree,
    or None; a walk without recursion."""
    todo = [(tree, 1, (1, 0))]
    while todo:
        node, depth, where = todo.pop()
        if hasattr(node, "lineno"):
            where = (node.lineno, node.col_offset)
        if depth > budget:
            return where
        todo.extend((child, depth + 1, where) for child in ast.iter_child_nodes(node))
    return None


# {filename: (the file's lines, {first line: FunctionDef})}: one parse per file
_module_trees = {}


def file_lines_of(pyfunc):
    """The lines of pyfunc's file now (a list kept by linecache), to parse
    later what was there when it was defined; None without a file."""
    filename = pyfunc.__code__.co_filename
    if filename.startswith("<"):
        return None
    linecache.checkcache(filename)
    return linecache.getlines(filename, pyfunc.__globals__) or None


def _from_module_tree(self, pyfunc, lines=None):
    """The fast path for a def in a file: parse the whole file once (cached)
    and pick the def starting at the code's first line, instead of letting
    inspect tokenize each function (the bulk of a warm-cache import).
    False when it does not apply (lambdas, no file): inspect then decides.
    lines: the file's lines to read (file_lines_of), else the file now."""
    code = pyfunc.__code__
    filename = code.co_filename
    if pyfunc.__name__ == "<lambda>" or filename.startswith("<"):
        return False
    if lines is None:
        linecache.checkcache(filename)      # as inspect does: a file edited since
        lines = linecache.getlines(filename, pyfunc.__globals__)
    if not lines or not _roomy():
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


def _lambda_alone(lines, filename, offset):
    """The tree of the lambda expressions in lines that are not a statement
    on their own (``vectorize(sigs)(\n    lambda x: x + 1)``: inspect gives
    from the lambda's line to the end of the call).  Each ``lambda`` of the
    first line is parsed from where it starts to the first place it can end
    (a top-level comma or closing bracket ends a lambda; a comma inside its
    body is inside brackets), at most a few hundred tries; its columns are
    put back where they are in the file."""
    text = "".join(lines)
    first = lines[0]
    trees = []
    start = first.find("lambda")
    while start >= 0:
        ends = [i for i in range(start + 6, len(text)) if text[i] in ",)]}\n"][:400]
        for end in ends + [len(text)]:
            try:
                tree = ast.parse("(" + text[start:end] + ")", filename)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if hasattr(node, "lineno"):
                    if node.lineno == 1:
                        node.col_offset += start - 1
                    if getattr(node, "end_lineno", None) == 1:
                        node.end_col_offset += start - 1
            trees.append(tree)
            break
        start = first.find("lambda", start + 1)
    if not trees:
        raise SyntaxError(f"cannot parse the lambda in {text!r}")
    return ast.Module(body=[stmt for t in trees for stmt in t.body], type_ignores=[])


def _body_start(code):
    """(file line, column) where a lambda's body starts, from its code's
    positions (3.11+; None before, or when the code has none)."""
    if not hasattr(code, "co_positions"):
        return None
    starts = [(line, col) for line, _, col, end in code.co_positions()
              if line is not None and col is not None and (col, end) != (0, 0)]
    return min(starts) if starts else None


def _find_function(tree, pyfunc, line_offset=0):
    name = pyfunc.__name__
    params = list(pyfunc.__code__.co_varnames[: pyfunc.__code__.co_argcount])
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    if name == "<lambda>":
        found = [node for node in ast.walk(tree)
                 if isinstance(node, ast.Lambda) and [a.arg for a in node.args.args] == params]
        # several lambdas with these parameters on the line: the one whose
        # body starts where the code's first position is
        start = _body_start(pyfunc.__code__) if len(found) > 1 else None
        at = [n for n in found if (n.body.lineno + line_offset, n.body.col_offset) == start]
        for node in at[:1] or found[:1]:
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
