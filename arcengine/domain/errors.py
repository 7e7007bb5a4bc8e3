"""Helpers for errors that reach the user."""

from __future__ import annotations


class UserError(Exception):
    """An error whose message is the whole story (a bad problem folder, a full disk, a provider's refusal): the
    command line prints it as one line, without a traceback."""


def first_leaf(error: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups: what a task group's failure was about."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
