"""A candidate's ``TUNABLES``: read the search space and the current settings, and rewrite settings.

A tunable is a module-level constant ``NAME = literal`` with ``TUNABLES = {"NAME": [values...]}`` beside it.
``TUNABLES_WHEN = {"NAME": {"OTHER": [values...]}}`` (optional) says that NAME matters only while OTHER holds one
of those values, so a tuner spends no candidate changing it where the kernel ignores it.
"""

from __future__ import annotations

import ast
from typing import Any

Settings = dict[str, Any]
Conditions = dict[str, dict[str, list[Any]]]  # TUNABLES_WHEN: name -> {other: the values it must hold}


class TunablesError(Exception):
    pass


def _module_constants(tree: ast.Module) -> dict[str, ast.Assign]:
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            constants[node.targets[0].id] = node
    return constants


def read_tunables(source: str) -> tuple[dict[str, list[Any]], Settings]:
    """(space, current settings). Empty space when the module declares no TUNABLES."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise TunablesError(f"source does not parse: {error.msg}") from None
    constants = _module_constants(tree)
    if "TUNABLES" not in constants:
        return {}, {}
    try:
        space = ast.literal_eval(constants["TUNABLES"].value)
    except ValueError:
        raise TunablesError("TUNABLES must be a literal dict of lists") from None
    if not isinstance(space, dict) or not all(isinstance(v, list) and v for v in space.values()):
        raise TunablesError("TUNABLES must map names to non-empty lists of values")
    current = {}
    for name in space:
        if name not in constants:
            raise TunablesError(f"TUNABLES names {name!r} but the module has no constant {name} = ...")
        try:
            current[name] = ast.literal_eval(constants[name].value)
        except ValueError:
            raise TunablesError(f"{name} must be assigned a literal") from None
    return space, current


def read_conditions(source: str) -> Conditions:
    """``TUNABLES_WHEN``: for a tunable, the values other tunables must hold for it to matter ({} if none)."""
    try:
        constants = _module_constants(ast.parse(source))
        when = ast.literal_eval(constants["TUNABLES_WHEN"].value) if "TUNABLES_WHEN" in constants else {}
    except (SyntaxError, ValueError):
        raise TunablesError("TUNABLES_WHEN must be a literal dict of {name: {other: [values]}}") from None
    if not isinstance(when, dict) or not all(
            isinstance(c, dict) and all(isinstance(v, list) for v in c.values()) for c in when.values()):
        raise TunablesError("TUNABLES_WHEN must be a literal dict of {name: {other: [values]}}")
    return when


def inert(before: Settings, after: Settings, conditions: Conditions) -> bool:
    """Whether ``after`` changes only tunables that do not matter under it (their conditions unmet)."""
    changed = [name for name in after if before.get(name) != after[name]]
    return bool(changed) and all(
        any(after.get(other) not in values for other, values in conditions.get(name, {}).items()) for name in changed)


def declares_tunables(source: str) -> bool:
    """Whether the offline tuner has something to search in this kernel."""
    try:
        space, _ = read_tunables(source)
    except TunablesError:
        return False
    return bool(space)


def apply_settings(source: str, settings: Settings) -> str:
    """The source with each named constant's value replaced (everything else byte for byte unchanged)."""
    tree = ast.parse(source)
    constants = _module_constants(tree)
    lines = source.splitlines(keepends=True)
    # Rewrite bottom-up so earlier offsets stay valid.
    for name in sorted(settings, key=lambda n: -constants[n].lineno):
        value = constants[name].value
        if value.lineno != value.end_lineno:
            raise TunablesError(f"{name} spans several lines; the tuner rewrites one-line constants only")
        line = lines[value.lineno - 1]
        encoded = line.encode()
        start, end = value.col_offset, value.end_col_offset  # byte offsets
        lines[value.lineno - 1] = (encoded[:start] + repr(settings[name]).encode() + encoded[end:]).decode()
    return "".join(lines)


def describe_change(before: Settings, after: Settings) -> str:
    changes = [f"{n} {before.get(n)!r}→{after[n]!r}" for n in after if before.get(n) != after[n]]
    return ", ".join(changes) or "no change"
