"""The fake vendor servers in fake_llm.py, driven by the real anthropic and openai SDKs over 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import anthropic
import anyio
import openai
import pytest

from tests.providers.fake_llm import Delay, FakeAnthropic, FakeOpenAI, Malformed, Reply, Status

MESSAGES = [{"role": "user", "content": "Say hi."}]


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


class RecordedSleeps:
    """anyio as an SDK's client module sees it, with its retry waits recorded rather than waited out."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __getattr__(self, name: str) -> object:
        return getattr(anyio, name)

    async def sleep(self, seconds: float) -> None:
        self.seconds.append(seconds)
        await anyio.sleep(0)


@pytest.fixture
def sdk_sleeps(monkeypatch: pytest.MonkeyPatch) -> RecordedSleeps:
    recorded = RecordedSleeps()
    for client_module in (anthropic._base_client, openai._base_client):
        monkeypatch.setattr(client_module, "anyio", recorded)
    return recorded


def _anthropic(server: FakeAnthropic, **kwargs: object) -> anthropic.AsyncAnthropic:
    options: dict = {"max_retries": 2, **kwargs}
    return anthropic.AsyncAnthropic(base_url=server.url, api_key="test-key", **options)


def _openai(server: FakeOpenAI, **kwargs: object) -> openai.AsyncOpenAI:
    options: dict = {"max_retries": 2, **kwargs}
    return openai.AsyncOpenAI(base_url=server.url, api_key="test-key", **options)


async def _ask_anthropic(client: anthropic.AsyncAnthropic) -> anthropic.types.Message:
    return await client.messages.create(model="claude-test", max_tokens=100, messages=MESSAGES)


async def _ask_openai(client: openai.AsyncOpenAI) -> openai.types.chat.ChatCompletion:
    return await client.chat.completions.create(model="gpt-test", messages=MESSAGES)


# -- Anthropic ---------------------------------------------------------------------------------------------


async def test_anthropic_reply_text_usage_and_request(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(Reply("hello there", input_tokens=120, output_tokens=7, cached_tokens=30))
    async with _anthropic(fake_anthropic) as client:
        message = await _ask_anthropic(client)
    assert isinstance(message, anthropic.types.Message)
    assert [block.text for block in message.content] == ["hello there"]
    assert message.model == "claude-test"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == 120
    assert message.usage.output_tokens == 7
    assert message.usage.cache_read_input_tokens == 30
    assert message._request_id is not None and message._request_id.startswith("req_")
    assert fake_anthropic.usage_reported == [{"input_tokens": 120, "output_tokens": 7,
                                              "cache_read_input_tokens": 30, "cache_creation_input_tokens": 0}]
    [request] = fake_anthropic.requests
    assert request["path"] == "/v1/messages"
    # anthropic 2.x sends api_key as a bearer token (x-api-key is gone), plus its API version.
    assert request["headers"]["authorization"] == "Bearer test-key"
    assert "x-api-key" not in request["headers"]
    assert request["headers"]["anthropic-version"]
    assert request["body"]["messages"] == MESSAGES
    assert request["body"]["model"] == "claude-test"
    assert request["body"]["max_tokens"] == 100


async def test_anthropic_default_responder_and_custom_responder() -> None:
    with FakeAnthropic() as server:
        async with _anthropic(server) as client:
            assert (await _ask_anthropic(client)).content[0].text == "ok"
    with FakeAnthropic(responder=lambda body: f"echo {body['messages'][-1]['content']}") as server:
        async with _anthropic(server) as client:
            assert (await _ask_anthropic(client)).content[0].text == "echo Say hi."
        assert len(server.usage_reported) == 1


async def test_anthropic_429_retry_after_is_honoured(fake_anthropic: FakeAnthropic,
                                                     sdk_sleeps: RecordedSleeps) -> None:
    fake_anthropic.script(Status(429, retry_after=0.05), Reply("after the wait"))
    async with _anthropic(fake_anthropic) as client:
        message = await _ask_anthropic(client)
    assert message.content[0].text == "after the wait"
    assert len(fake_anthropic.requests) == 2
    assert fake_anthropic.requests[1]["headers"]["x-stainless-retry-count"] == "1"
    assert sdk_sleeps.seconds == [pytest.approx(0.05)]  # the server's wait, not the SDK's own backoff (>= 0.375 s)
    assert len(fake_anthropic.usage_reported) == 1  # only the successful reply reported usage


async def test_anthropic_500_beyond_max_retries_raises(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(*[Status(500, retry_after=0.01, message="boom")] * 4)
    async with _anthropic(fake_anthropic) as client:
        with pytest.raises(anthropic.InternalServerError) as caught:
            await _ask_anthropic(client)
    assert caught.value.status_code == 500
    assert caught.value.body["error"] == {"type": "api_error", "message": "boom"}
    assert len(fake_anthropic.requests) == 3  # 1 try + max_retries=2
    assert fake_anthropic.pending == 1
    assert fake_anthropic.usage_reported == []


async def test_anthropic_status_error_types(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(Status(400, message="bad"), Status(429), Status(529, retry_after=0.01), Reply("fine"))
    async with _anthropic(fake_anthropic, max_retries=0) as client:
        with pytest.raises(anthropic.BadRequestError) as bad:
            await _ask_anthropic(client)
        with pytest.raises(anthropic.RateLimitError) as limited:
            await _ask_anthropic(client)
        with pytest.raises(anthropic.APIStatusError) as overloaded:
            await _ask_anthropic(client)
    assert bad.value.body["error"] == {"type": "invalid_request_error", "message": "bad"}
    assert limited.value.body["error"]["type"] == "rate_limit_error"
    assert overloaded.value.status_code == 529
    assert overloaded.value.body["error"]["type"] == "overloaded_error"
    assert fake_anthropic.pending == 1


async def test_anthropic_delay_times_out_and_server_survives(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(Delay(2.0, Reply("too late")), Reply("on time"))
    async with _anthropic(fake_anthropic, timeout=0.5, max_retries=0) as client:
        with pytest.raises(anthropic.APITimeoutError):
            await _ask_anthropic(client)
        assert (await _ask_anthropic(client)).content[0].text == "on time"
    assert len(fake_anthropic.requests) == 2


async def test_anthropic_abandoned_delay_reports_no_usage(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(Delay(0.3, Reply("nobody listens")))
    async with _anthropic(fake_anthropic, timeout=0.1, max_retries=0) as client:
        with pytest.raises(anthropic.APITimeoutError):
            await _ask_anthropic(client)
    await asyncio.sleep(0.4)  # the server wakes up, sees the client is gone and drops the reply
    assert fake_anthropic.usage_reported == []


async def test_anthropic_malformed_body_raises_json_decode_error(fake_anthropic: FakeAnthropic) -> None:
    # A 200 with an application/json body that is not JSON is not retried and not wrapped by the SDK:
    # the json.JSONDecodeError from parsing the body escapes messages.create() as is.
    fake_anthropic.script(Malformed())
    async with _anthropic(fake_anthropic) as client:
        with pytest.raises(json.JSONDecodeError):
            await _ask_anthropic(client)
    assert len(fake_anthropic.requests) == 1
    assert fake_anthropic.usage_reported == []


async def test_anthropic_unknown_path_is_404(fake_anthropic: FakeAnthropic) -> None:
    async with _anthropic(fake_anthropic) as client:
        with pytest.raises(anthropic.NotFoundError) as caught:
            await client.models.list()
    assert caught.value.body["error"]["type"] == "not_found_error"
    assert fake_anthropic.requests[0]["path"].startswith("/v1/models")


# -- OpenAI ------------------------------------------------------------------------------------------------


async def test_openai_reply_text_usage_and_request(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply("hello there", input_tokens=120, output_tokens=7, cached_tokens=30))
    async with _openai(fake_openai) as client:
        completion = await _ask_openai(client)
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].message.content == "hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "gpt-test"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 120
    assert completion.usage.completion_tokens == 7
    assert completion.usage.total_tokens == 127
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 30
    assert fake_openai.usage_reported == [{"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
                                           "prompt_tokens_details": {"cached_tokens": 30}}]
    [request] = fake_openai.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer test-key"
    assert request["body"]["messages"] == MESSAGES
    assert request["body"]["model"] == "gpt-test"


async def test_openai_default_responder_and_custom_responder() -> None:
    with FakeOpenAI() as server:
        async with _openai(server) as client:
            assert (await _ask_openai(client)).choices[0].message.content == "ok"
    with FakeOpenAI(responder=lambda body: body["model"].upper()) as server:
        async with _openai(server) as client:
            assert (await _ask_openai(client)).choices[0].message.content == "GPT-TEST"


async def test_openai_429_retry_after_is_honoured(fake_openai: FakeOpenAI, sdk_sleeps: RecordedSleeps) -> None:
    fake_openai.script(Status(429, retry_after=0.05), Reply("after the wait"))
    async with _openai(fake_openai) as client:
        completion = await _ask_openai(client)
    assert completion.choices[0].message.content == "after the wait"
    assert len(fake_openai.requests) == 2
    assert fake_openai.requests[1]["headers"]["x-stainless-retry-count"] == "1"
    assert sdk_sleeps.seconds == [pytest.approx(0.05)]
    assert len(fake_openai.usage_reported) == 1


async def test_openai_500_beyond_max_retries_raises(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*[Status(500, retry_after=0.01, message="boom")] * 4)
    async with _openai(fake_openai) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await _ask_openai(client)
    assert caught.value.status_code == 500
    assert caught.value.body == {"message": "boom", "type": "server_error", "param": None, "code": None}
    assert len(fake_openai.requests) == 3
    assert fake_openai.pending == 1
    assert fake_openai.usage_reported == []


async def test_openai_status_error_types(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Status(400, message="bad"), Status(429))
    async with _openai(fake_openai, max_retries=0) as client:
        with pytest.raises(openai.BadRequestError) as bad:
            await _ask_openai(client)
        with pytest.raises(openai.RateLimitError) as limited:
            await _ask_openai(client)
    assert bad.value.body == {"message": "bad", "type": "invalid_request_error", "param": None, "code": None}
    assert limited.value.code == "rate_limit_exceeded"


async def test_openai_delay_times_out_and_server_survives(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Delay(2.0, Reply("too late")), Reply("on time"))
    async with _openai(fake_openai, timeout=0.5, max_retries=0) as client:
        with pytest.raises(openai.APITimeoutError):
            await _ask_openai(client)
        assert (await _ask_openai(client)).choices[0].message.content == "on time"
    assert len(fake_openai.requests) == 2


async def test_openai_malformed_body_raises_json_decode_error(fake_openai: FakeOpenAI) -> None:
    # As with Anthropic: no retry, no wrapping; the raw json.JSONDecodeError escapes.
    fake_openai.script(Malformed())
    async with _openai(fake_openai) as client:
        with pytest.raises(json.JSONDecodeError):
            await _ask_openai(client)
    assert len(fake_openai.requests) == 1
    assert fake_openai.usage_reported == []


async def test_openai_unknown_path_is_404(fake_openai: FakeOpenAI) -> None:
    async with _openai(fake_openai) as client:
        with pytest.raises(openai.NotFoundError) as caught:
            await client.models.list()
    assert caught.value.body["type"] == "invalid_request_error"
    assert fake_openai.requests[0]["path"] == "/v1/models"


# -- server lifecycle --------------------------------------------------------------------------------------


def test_exit_does_not_wait_for_a_pending_delay() -> None:
    def post(url: str) -> None:
        with contextlib.suppress(Exception):
            urllib.request.urlopen(urllib.request.Request(url, data=b'{"model": "m"}', method="POST"), timeout=5)

    server = FakeOpenAI()
    with server:
        server.script(Delay(30.0, Reply("never")))
        threading.Thread(target=post, args=(f"{server.url}/chat/completions",), daemon=True).start()
        deadline = time.monotonic() + 2
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.requests
        started = time.monotonic()
    assert time.monotonic() - started < 1.0
    assert server.usage_reported == []
