"""Structured logging: JSON lines to a run's ``engine.log``, or nowhere. Never to the terminal, which belongs
to the display (or to ``--json`` output)."""

from __future__ import annotations

import logging
from pathlib import Path

import structlog

from arcengine.recording.redact import redact_secrets


def _redacted(logger: object, method: str, line: str) -> str:
    """The last processor: the rendered line with every secret value masked (tracebacks quote messages)."""
    return redact_secrets(line)


def configure_logging(path: Path | None) -> None:
    if path is None:
        structlog.configure(logger_factory=structlog.ReturnLoggerFactory(), cache_logger_on_first_use=False)
        return
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                    structlog.processors.format_exc_info, structlog.processors.JSONRenderer(), _redacted],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.WriteLoggerFactory(file=path.open("a", encoding="utf-8")),
        cache_logger_on_first_use=False,
    )
