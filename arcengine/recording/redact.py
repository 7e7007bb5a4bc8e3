"""Secrets never leave the engine: the values of secret-looking environment variables (API keys, tokens) are
masked in every event before the log, the database or a display sees it, in every log line, and in the error
and stop messages a user reads. A provider's error may quote the key it was given; a candidate may find one."""

from __future__ import annotations

import json
import os
import re

from arcengine.domain.events import Event, parse_event

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def secret_values() -> list[tuple[str, str]]:
    return [(name, value) for name, value in os.environ.items() if SECRET_NAME.search(name) and len(value) >= 6]


def printable(text: str) -> str:
    """``text`` as one terminal line: every character that is not printable (an escape sequence's ESC, a carriage
    return, a newline) shown as a space. What a candidate raised reaches reasons, and a terminal obeys escapes."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def redact_secrets(text: str) -> str:
    for name, value in secret_values():
        text = text.replace(value, f"<{name} redacted>")
    return text


def redact_event(event: Event, secrets: list[tuple[str, str]] | None = None) -> Event:
    """The event with every secret value masked in any of its fields (unchanged, and not copied, if none).
    ``secrets``: the (name, value) pairs to mask; by default the environment's, read now."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return event
    dumped = event.model_dump_json()
    changed = dumped
    for name, value in secrets:
        changed = changed.replace(json.dumps(value)[1:-1], f"<{name} redacted>")
    return event if changed == dumped else parse_event(changed.encode())
