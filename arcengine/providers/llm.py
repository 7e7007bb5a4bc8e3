"""What the LLM providers share: the prompts, reading replies, usage and cost per call, one concurrency limit per
provider, and what an SDK error means for the campaign. Retrying is the SDKs' own layer (429, 408, 409, 5xx,
timeouts and connection errors, exponential backoff with jitter, honouring retry-after); arcengine adds none."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import anyio
import structlog

from arcengine.domain.events import CandidateDecided, Usage
from arcengine.providers.base import (
    AgentContext,
    Proposal,
    ProviderError,
    ProviderFatal,
    ProviderUnavailable,
    Reflection,
)
from arcengine.providers.pricing import PriceTable
from arcengine.providers.prompt import Prompt, propose_prompt, reflect_prompt
from arcengine.providers.reply import parse_reflection, parse_reply

log = structlog.get_logger()

PROPOSE_MAX_TOKENS = 16_000  # a full kernel file with some reasoning around it
REFLECT_MAX_TOKENS = 800
FATAL_STATUS = (401, 403, 404)  # bad key, no access, unknown model: every retry would fail the same way


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int  # every prompt token, cached or not
    output_tokens: int
    cached_tokens: int = 0  # prompt tokens read from the vendor's cache
    cache_write_tokens: int = 0  # prompt tokens written to it (Anthropic bills these apart)


class LLMProvider(ABC):
    vendor: str

    def __init__(self, model: str = "", *, base_url: str | None = None, concurrency: int = 4,
                 timeout_s: float = 300.0, max_retries: int = 4, prices: PriceTable | None = None,
                 max_output_tokens: int = PROPOSE_MAX_TOKENS, **_: Any) -> None:
        if not model:
            raise ProviderFatal(f"{self.vendor} needs a model: --model {self.vendor}:MODEL")
        self.model = model
        self.name = f"{self.vendor}:{model}"
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_output_tokens = max_output_tokens
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._price = (prices or PriceTable()).price(model)

    @property
    def priced(self) -> bool:
        return self._price is not None

    async def propose(self, context: AgentContext) -> Proposal:
        prompt = propose_prompt(context)
        request = render(prompt)
        try:
            completion, usage = await self._call(prompt, self.max_output_tokens)
        except ProviderError as error:  # the vendor refused this request (too long, malformed reply)
            return Proposal(source="", strategy=context.strategy.name, rationale=str(error),
                            request=request, response="", failure=str(error))
        try:
            parsed = parse_reply(completion.text, context.strategy.name)
        except ProviderError as error:
            return Proposal(source="", strategy=context.strategy.name, rationale=str(error),
                            request=request, response=completion.text, usage=usage, failure=str(error))
        # The strategy stays the agent's skill (memory and the leaderboard group by it); the model's own words
        # on what it tried lead the rationale.
        return Proposal(source=parsed.source, strategy=context.strategy.name,
                        rationale=f"{parsed.strategy.rstrip('.')}. {parsed.rationale}",
                        request=request, response=completion.text, usage=usage)

    async def reflect(self, context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Reflection:
        prompt = reflect_prompt(context, proposal, decided)
        completion, usage = await self._call(prompt, REFLECT_MAX_TOKENS)
        summary, reflection = parse_reflection(completion.text)
        return Reflection(summary=summary, reflection=reflection, usage=usage, request=render(prompt),
                          response=completion.text)

    async def _call(self, prompt: Prompt, max_tokens: int) -> tuple[Completion, Usage]:
        async with self._limiter:
            started = time.monotonic()
            completion = await self._complete(prompt, max_tokens)
            latency = time.monotonic() - started
        log.info("provider.call", provider=self.name, input_tokens=completion.input_tokens,
                 output_tokens=completion.output_tokens, cached_tokens=completion.cached_tokens,
                 latency_s=round(latency, 2))
        return completion, self._usage(completion, latency)

    def _usage(self, completion: Completion, latency_s: float) -> Usage:
        cost = 0.0
        if self._price is not None:
            uncached = max(0, completion.input_tokens - completion.cached_tokens - completion.cache_write_tokens)
            cost = self._price.cost(uncached, completion.cached_tokens, completion.cache_write_tokens,
                                    completion.output_tokens)
        return Usage(input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
                     cached_tokens=completion.cached_tokens, cost_usd=cost, latency_s=latency_s)

    @abstractmethod
    async def _complete(self, prompt: Prompt, max_tokens: int) -> Completion:
        """One request through the vendor's SDK (its retries included); SDK errors go through `translate`."""


def render(prompt: Prompt) -> str:
    """The request as the event log keeps it."""
    return f"[system]\n{prompt.system}\n[user]\n{prompt.user}"


def translate(error: Exception, sdk: Any, vendor: str) -> Exception:
    """What an SDK error means for the campaign, with a one-line reason. Both SDKs share the error classes'
    names (APIStatusError, APITimeoutError, APIConnectionError, APIResponseValidationError)."""
    if isinstance(error, sdk.APIStatusError):
        reason = f"{vendor} answered {error.status_code}: {_message(error)}"
        if error.status_code in FATAL_STATUS:
            return ProviderFatal(reason)
        if error.status_code in (408, 409, 429) or error.status_code >= 500:
            return ProviderUnavailable(f"{reason} (after retries)")
        return ProviderError(reason)  # this request was refused (too long, bad parameter): this position only
    if isinstance(error, sdk.APITimeoutError):
        return ProviderUnavailable(f"{vendor} timed out (after retries)")
    if isinstance(error, sdk.APIConnectionError):
        return ProviderUnavailable(f"{vendor} unreachable: {error} (after retries)")
    if isinstance(error, sdk.APIResponseValidationError | ValueError | TypeError | AttributeError | KeyError):
        return ProviderError(f"{vendor} sent a malformed reply: {type(error).__name__}: {error}")
    return error


def _message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(error)[:300]
