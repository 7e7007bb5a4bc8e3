"""``openai:MODEL``: GPT models through Chat Completions (AsyncOpenAI), and any OpenAI-compatible server (vLLM,
Ollama, llama.cpp) given with ``--base-url`` or OPENAI_BASE_URL. The stable prefix goes first, as the system
message, so the vendor's automatic prefix caching applies."""

from __future__ import annotations

import os
from typing import Any

import openai

from arcengine.providers.base import ProviderFatal
from arcengine.providers.llm import Completion, LLMProvider, translate
from arcengine.providers.prompt import Prompt


class OpenAIProvider(LLMProvider):
    vendor = "openai"

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        key = os.environ.get("OPENAI_API_KEY")
        self.local = bool(self.base_url or os.environ.get("OPENAI_BASE_URL"))
        if not key and not self.local:
            raise ProviderFatal("OPENAI_API_KEY is not set (or give --base-url for a local server)")
        # The SDK's retry layer is the only one: it backs off on 429/5xx/timeouts and honours retry-after.
        self._client = openai.AsyncOpenAI(api_key=key or "not-needed", base_url=self.base_url,
                                          timeout=self.timeout_s, max_retries=self.max_retries)

    async def _complete(self, prompt: Prompt, max_tokens: int) -> Completion:
        # OpenAI's newer models take only max_completion_tokens; local servers know max_tokens.
        limit = {"max_tokens": max_tokens} if self.local else {"max_completion_tokens": max_tokens}
        try:
            response = await self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}],
                **limit,  # type: ignore[arg-type]
            )
            text = response.choices[0].message.content or ""
            usage = response.usage
            details = usage.prompt_tokens_details if usage else None
            cached = (details.cached_tokens or 0) if details else 0
        except Exception as error:
            raise translate(error, openai, self.vendor) from None
        if usage is None:  # some local servers omit usage: the call is still counted, at zero tokens
            return Completion(text=text, input_tokens=0, output_tokens=0)
        return Completion(text=text, input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens,
                          cached_tokens=cached)
