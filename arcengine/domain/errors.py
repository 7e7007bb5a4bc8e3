"""Helpers for errors that reach the user, and the exit codes the command line gives them."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a script can tell apart by the exit status alone (docs/cli.md lists them)."""

    OK = 0
    FAILED = 1  # a kernel failed or was refused (eval, problems check, a campaign whose every seed fails), or a
    # replay that did not reproduce its run: the check ran and said no
    USAGE = 2  # bad flags or settings, an unknown problem, an unreadable or busy file or folder: fix the input
    INTERNAL = 3  # a bug in arcengine (or something it did not expect): rerun with --debug and report it
    INTERRUPTED = 130  # Ctrl-C, or q in the terminal UI before the end


class UserError(Exception):
    """An error whose message is the whole story (a bad problem folder, a full disk, a provider's refusal): the
    command line prints it as one line, without a traceback, and exits with ``exit_code``."""

    exit_code: ExitCode = ExitCode.USAGE


def first_leaf(error: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups: what a task group's failure was about."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
