"""Structured logging: JSON lines to a run's ``engine.log``, or nowhere. Never to the terminal, which belongs
to the display (or to ``--json`` output)."""

from __future__ import annotations

import logging
from pathlib import Path

import structlog


def configure_logging(path: Path | None) -> None:
    if path is None:
        structlog.configure(logger_factory=structlog.ReturnLoggerFactory(), cache_logger_on_first_use=False)
        return
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                    structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.WriteLoggerFactory(file=path.open("a", encoding="utf-8")),
        cache_logger_on_first_use=False,
    )
