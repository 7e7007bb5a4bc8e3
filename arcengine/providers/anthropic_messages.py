"""``anthropic:MODEL``: Claude through the Messages API (AsyncAnthropic). The stable prefix of every agent's
prompt is marked for prompt caching, so a campaign pays full price for it about once per agent."""

from __future__ import annotations

import os
from typing import Any

import anthropic

from arcengine.providers.base import ProviderFatal
from arcengine.providers.llm import Completion, LLMProvider, translate
from arcengine.providers.prompt import Prompt


class AnthropicProvider(LLMProvider):
    vendor = "anthropic"

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        key = os.environ.get("ANTHROPIC_API_KEY")
        local = self.base_url or os.environ.get("ANTHROPIC_BASE_URL")
        if not key and not local:
            raise ProviderFatal("ANTHROPIC_API_KEY is not set")
        # The SDK's retry layer is the only one: it backs off on 429/5xx/timeouts and honours retry-after.
        self._client = anthropic.AsyncAnthropic(api_key=key or "not-needed", base_url=self.base_url,
                                                timeout=self.timeout_s, max_retries=self.max_retries)

    async def _complete(self, prompt: Prompt, max_tokens: int) -> Completion:
        try:
            message = await self._client.messages.create(
                model=self.model, max_tokens=max_tokens,
                system=[{"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}],
                messages=[{"role": "user", "content": prompt.user}],
            )
            text = "".join(block.text for block in message.content if block.type == "text")
            usage = message.usage
            cached = usage.cache_read_input_tokens or 0
            written = usage.cache_creation_input_tokens or 0
        except Exception as error:
            raise translate(error, anthropic, self.vendor) from None
        return Completion(text=text, input_tokens=usage.input_tokens + cached + written,
                          output_tokens=usage.output_tokens, cached_tokens=cached, cache_write_tokens=written)
