"""Providers, registered by name; each implementation (and its SDK) is imported only when used."""

from __future__ import annotations

import importlib
from typing import Any

from arcengine.providers.base import Provider, ProviderError, ProviderFatal

_REGISTRY: dict[str, str] = {
    "offline": "arcengine.providers.offline:OfflineProvider",
    "scripted": "arcengine.providers.scripted:ScriptedProvider",
    "replay": "arcengine.providers.replay:ReplayProvider",
    "anthropic": "arcengine.providers.anthropic_messages:AnthropicProvider",
    "openai": "arcengine.providers.openai_chat:OpenAIProvider",
}


def provider_names() -> list[str]:
    return sorted(_REGISTRY)


def create_provider(spec: str, **options: Any) -> Provider:
    """``spec`` is ``NAME`` or ``NAME:MODEL`` (``offline``, ``anthropic:claude-sonnet-4-5``, ``replay:RUN_DIR``)."""
    name, _, model = spec.partition(":")
    if name not in _REGISTRY:
        raise ProviderError(f"unknown provider {name!r} (known: {', '.join(provider_names())})")
    module_name, _, class_name = _REGISTRY[name].partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except ImportError as error:  # the vendor's SDK is missing
        raise ProviderFatal(f"provider {name} cannot load: {error}") from None
    if model:
        options["model"] = model
    return cls(**options)
