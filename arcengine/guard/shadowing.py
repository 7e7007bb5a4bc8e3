"""Which uses of a builtin's name are a function's own variable: ``def make(compile: bool)`` then ``if compile:``.

The gate refuses the builtins that run code (exec, eval, compile, vars, ...) by name. A function's parameter or
local of the same name is a different thing, and honest code names parameters so (a ``compile`` flag). Only a
function's own binding counts: a local is local for the whole function body (unbound, it raises; it never falls
back to the builtin), and so is an enclosing function's (a closure cell). A module- or class-level binding does not
count, since a binding that never ran (``if 0: compile = f``) leaves the builtin in place. Comprehension variables
and walrus targets inside comprehensions are left out too (a narrower scope, or a subtle one): what this misses
is refused, never the other way round.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_NARROWER = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.ClassDef, *FUNCTIONS)


def shadowed_uses(tree: ast.AST, names: Collection[str]) -> set[int]:
    """The ids of the Name nodes among ``names`` that an enclosing function binds itself."""
    found: set[int] = set()

    def visit(node: ast.AST, bound: frozenset[str]) -> None:
        if isinstance(node, ast.Name) and node.id in bound and node.id in names:
            found.add(id(node))
        if isinstance(node, ast.ClassDef):  # a name its body assigns is the class's (else a global or builtin)
            for outer in (*node.bases, *node.keywords, *node.decorator_list):
                visit(outer, bound)
            inner = bound - _assigned(node.body)
            for statement in node.body:
                visit(statement, inner)
            return
        if isinstance(node, FUNCTIONS):
            for outer in (*node.args.defaults, *(d for d in node.args.kw_defaults if d), *_decorators(node)):
                visit(outer, bound)  # evaluated where the function is defined
            inner = bound | _locals(node)
            for statement in node.body if isinstance(node.body, list) else [node.body]:
                visit(statement, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, bound)

    visit(tree, frozenset())
    return found


def _decorators(node: ast.AST) -> list[ast.expr]:
    return list(getattr(node, "decorator_list", []))


def _assigned(body: list[ast.stmt]) -> set[str]:
    """The names a scope's statements bind directly (not in the scopes they open)."""
    names: set[str] = set()
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if not isinstance(node, _NARROWER):
            pending.extend(ast.iter_child_nodes(node))
    return names


def _locals(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """The names a function binds in its own scope (parameters, assignments, imports, defs, except and with
    targets), less those it declares global or nonlocal."""
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    body = function.body if isinstance(function.body, list) else [ast.Expr(function.body)]
    names |= _assigned(body)
    declared = {name for node in ast.walk(ast.Module(body=body, type_ignores=[]))
                if isinstance(node, ast.Global | ast.Nonlocal) for name in node.names}
    return frozenset(names - declared)
