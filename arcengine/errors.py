"""Helpers for errors that reach the user."""

from __future__ import annotations


def first_leaf(error: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups: what a task group's failure was about."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
