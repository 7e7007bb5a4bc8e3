"""arcengine/domain/tunables.py: read the space and settings, rewrite only the named constants, describe a change."""

from __future__ import annotations

import ast

import pytest

from arcengine.domain.tunables import (
    TunablesError,
    apply_settings,
    describe_change,
    inert,
    read_conditions,
    read_tunables,
)

SOURCE = '''\
"""A kernel — with a non-ASCII docstring (é) before the constants."""

import torch

BLOCK_N = 256  # tile width
NUM_WARPS=4
NAME = "fast"
SCALE = 0.5
FLAG = True
OTHER = 7  # not tunable
TUNABLES = {
    "BLOCK_N": [64, 128, 256, 512],
    "NUM_WARPS": [1, 2, 4, 8],
    "NAME": ["fast", "safe"],
    "SCALE": [0.25, 0.5, 1.0],
    "FLAG": [True, False],
}


def run(x):
    label = "é"; tile = BLOCK_N  # noqa
    return x * SCALE if FLAG else x + NUM_WARPS + OTHER + tile
'''


def test_read_tunables_space_and_current() -> None:
    space, current = read_tunables(SOURCE)
    assert space == {"BLOCK_N": [64, 128, 256, 512], "NUM_WARPS": [1, 2, 4, 8], "NAME": ["fast", "safe"],
                     "SCALE": [0.25, 0.5, 1.0], "FLAG": [True, False]}
    assert current == {"BLOCK_N": 256, "NUM_WARPS": 4, "NAME": "fast", "SCALE": 0.5, "FLAG": True}


def test_no_tunables() -> None:
    assert read_tunables("BLOCK = 1\n\ndef run(x):\n    return x\n") == ({}, {})


def test_apply_settings_changes_only_the_named_constants() -> None:
    settings = {"BLOCK_N": 1024, "NAME": "safe", "FLAG": False}
    out = apply_settings(SOURCE, settings)
    before, after = SOURCE.splitlines(keepends=True), out.splitlines(keepends=True)
    assert len(before) == len(after)
    changed = {i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}
    assert [after[i] for i in sorted(changed)] == ['BLOCK_N = 1024  # tile width\n', "NAME = 'safe'\n",
                                                   "FLAG = False\n"]
    _, current = read_tunables(out)
    assert current == {"BLOCK_N": 1024, "NUM_WARPS": 4, "NAME": "safe", "SCALE": 0.5, "FLAG": False}
    ast.parse(out)


def test_apply_settings_with_a_non_ascii_prefix_on_the_same_line() -> None:
    source = 'A = "é"; BLOCK = 4\nTUNABLES = {"BLOCK": [4, 8]}\n'
    out = apply_settings(source, {"BLOCK": 8})
    assert out == 'A = "é"; BLOCK = 8\nTUNABLES = {"BLOCK": [4, 8]}\n'
    assert read_tunables(out)[1] == {"BLOCK": 8}


def test_apply_settings_all_at_once_round_trips() -> None:
    settings = {"BLOCK_N": 64, "NUM_WARPS": 8, "NAME": "safe", "SCALE": 1.0, "FLAG": False}
    out = apply_settings(SOURCE, settings)
    assert read_tunables(out) == (read_tunables(SOURCE)[0], settings)
    assert "OTHER = 7  # not tunable\n" in out
    assert out.endswith("return x * SCALE if FLAG else x + NUM_WARPS + OTHER + tile\n")


def test_apply_settings_with_no_change_is_byte_identical() -> None:
    assert apply_settings(SOURCE, {}) == SOURCE
    assert apply_settings(SOURCE, {"BLOCK_N": 256}) == SOURCE


def test_apply_settings_refuses_a_multi_line_constant() -> None:
    source = "SHAPE = (\n    4,\n    8,\n)\nTUNABLES = {'SHAPE': [(4, 8), (8, 8)]}\n"
    assert read_tunables(source)[1] == {"SHAPE": (4, 8)}
    with pytest.raises(TunablesError, match="SHAPE spans several lines"):
        apply_settings(source, {"SHAPE": (8, 8)})


def test_apply_settings_inside_parentheses_on_their_own_lines() -> None:
    # The value node is the one line holding 4; the parentheses around it stay.
    source = "BLOCK = (\n    4\n)\nTUNABLES = {'BLOCK': [4, 8]}\n"
    out = apply_settings(source, {"BLOCK": 8})
    assert out == "BLOCK = (\n    8\n)\nTUNABLES = {'BLOCK': [4, 8]}\n"


def test_tunables_naming_a_missing_constant() -> None:
    with pytest.raises(TunablesError, match="'BLOCK_M'"):
        read_tunables('BLOCK_N = 1\nTUNABLES = {"BLOCK_N": [1, 2], "BLOCK_M": [1, 2]}\n')


def test_non_literal_tunables() -> None:
    with pytest.raises(TunablesError, match="literal"):
        read_tunables('BLOCK_N = 1\nTUNABLES = dict(BLOCK_N=[1, 2])\n')


def test_non_literal_constant_value() -> None:
    with pytest.raises(TunablesError, match="BLOCK_N must be assigned a literal"):
        read_tunables('BLOCK_N = 2 ** 8\nTUNABLES = {"BLOCK_N": [128, 256]}\n')


@pytest.mark.parametrize("tunables", ['["BLOCK_N"]', '{"BLOCK_N": 256}', '{"BLOCK_N": []}', '{"BLOCK_N": (1, 2)}'])
def test_tunables_of_the_wrong_shape(tunables: str) -> None:
    with pytest.raises(TunablesError, match="non-empty lists"):
        read_tunables(f"BLOCK_N = 1\nTUNABLES = {tunables}\n")


def test_source_that_does_not_parse() -> None:
    with pytest.raises(TunablesError, match="does not parse"):
        read_tunables("BLOCK_N = \n")


def test_describe_change() -> None:
    before = {"BLOCK_N": 256, "NUM_WARPS": 4, "NAME": "fast"}
    assert describe_change(before, {"BLOCK_N": 512, "NUM_WARPS": 4, "NAME": "fast"}) == "BLOCK_N 256→512"
    assert describe_change(before, {"BLOCK_N": 512, "NUM_WARPS": 4, "NAME": "safe"}) == (
        "BLOCK_N 256→512, NAME 'fast'→'safe'")
    assert describe_change(before, dict(before)) == "no change"
    assert describe_change({}, {"X": 1}) == "X None→1"


def test_conditions_say_when_a_tunable_matters() -> None:
    source = "A = 1\nB = 2\nTUNABLES = {'A': [1, 2], 'B': [2, 3]}\nTUNABLES_WHEN = {'B': {'A': [2]}}\n"
    conditions = read_conditions(source)
    assert conditions == {"B": {"A": [2]}}
    assert inert({"A": 1, "B": 2}, {"A": 1, "B": 3}, conditions)  # B moved while A = 1: the same kernel
    assert not inert({"A": 1, "B": 2}, {"A": 2, "B": 3}, conditions)
    assert not inert({"A": 2, "B": 2}, {"A": 2, "B": 3}, conditions)
    assert read_conditions("A = 1\nTUNABLES = {'A': [1]}\n") == {}
    with pytest.raises(TunablesError):
        read_conditions("TUNABLES_WHEN = {'B': ['A']}\n")
