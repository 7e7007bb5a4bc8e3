"""LLM providers end to end: campaigns against servers on 127.0.0.1 that speak the Anthropic Messages API and the
OpenAI Chat Completions API, with the real SDKs as clients and real guard children judging the kernels."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arcengine.domain.events import AgentFailed, CandidateDecided, CandidateProposed, ProviderCalled
from arcengine.domain.problem import load_problem
from arcengine.domain.skills import load_skills
from arcengine.engine.campaign import Campaign
from arcengine.engine.summary import CampaignSummary
from arcengine.providers.pricing import LIST_PRICES
from arcengine.recording.eventlog import read_events
from tests.conftest import SCALE
from tests.providers.fake_llm import Delay, FakeAnthropic, FakeLLMServer, FakeOpenAI, Malformed, Reply, Status

WORKING = re.compile(r"# Your working kernel.*?```python\n(.*?)```", re.DOTALL)


def request_text(body: dict[str, Any]) -> str:
    """Everything a request shows the model, whichever vendor's format it is in."""
    parts: list[str] = []
    system = body.get("system")
    if isinstance(system, list):
        parts += [block.get("text", "") for block in system]
    elif isinstance(system, str):
        parts.append(system)
    for message in body.get("messages", []):
        content = message.get("content")
        parts += [content] if isinstance(content, str) else [c.get("text", "") for c in content or []]
    return "\n".join(parts)


def engineer(body: dict[str, Any]) -> str:
    """A model that doubles the working kernel's CHUNK (a real speed-up on the scale fixture) and reflects in
    the requested form."""
    text = request_text(body)
    if "Summary: <one line" in text:
        return "Summary: larger CHUNK means fewer slices\nReflection: each slice costs a dispatch; halve their count."
    working = WORKING.search(text)
    assert working, "the turn must carry the working kernel"
    chunk = int(re.search(r"^CHUNK = (\d+)", working.group(1), re.MULTILINE).group(1))  # type: ignore[union-attr]
    source = working.group(1).replace(f"CHUNK = {chunk}", f"CHUNK = {min(chunk * 2, 1024)}")
    return f"Strategy: fewer, larger slices\nRationale: CHUNK {chunk} to {chunk * 2}.\n```python\n{source}```\n"


def held_out_values() -> set[str]:
    workloads = load_problem(SCALE).workloads_for("cpu")
    visible = {v for w in workloads if not w.held_out for v in w.axes.values()}
    return {str(v) for w in workloads if w.held_out for v in w.axes.values()} - {str(v) for v in visible}


def events_of(run_dir: Path, kind: type) -> list[Any]:
    return [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, kind)]


def assert_requests_carry_the_context(server: FakeLLMServer) -> None:
    texts = [request_text(r["body"]) for r in server.requests if r["body"]]
    skills = load_skills()
    for text in texts:  # each request carries the body of the strategy skill it names
        strategy = re.search(r'Your strategy is "([^"]+)"', text)
        assert strategy and skills[strategy.group(1)].body.strip() in text
    assert any("# The guard on your last candidate" in t for t in texts), "guard feedback reaches the model"
    assert any("# Memory" in t and ("WIN" in t or "TRAP" in t) for t in texts), "memory reaches the model"
    assert any("# Leaderboard" in t for t in texts)
    hidden = held_out_values()
    assert hidden
    for text in texts:
        assert not hidden & set(re.findall(r"\d+", text)), "a held-out axis value reached a prompt"


def assert_usage_matches_the_server(summary: CampaignSummary, server: FakeLLMServer, model: str) -> None:
    reported = server.usage_reported
    usage = summary.usage
    price = LIST_PRICES[model]
    if isinstance(server, FakeAnthropic):
        cached = sum(u.get("cache_read_input_tokens") or 0 for u in reported)
        written = sum(u.get("cache_creation_input_tokens") or 0 for u in reported)
        uncached = sum(u["input_tokens"] for u in reported)
        output = sum(u["output_tokens"] for u in reported)
        total_input = uncached + cached + written
    else:
        cached = sum((u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0 for u in reported)
        written = 0
        total_input = sum(u["prompt_tokens"] for u in reported)
        output = sum(u["completion_tokens"] for u in reported)
        uncached = total_input - cached
    assert usage.input_tokens == total_input
    assert usage.output_tokens == output
    assert usage.cached_tokens == cached
    assert usage.calls >= len(reported)  # plus the calls that brought no reply
    assert usage.cost_usd == pytest.approx(price.cost(uncached, cached, written, output), rel=1e-6, abs=1e-9)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")


async def test_anthropic_campaign_rate_limit_and_malformed_reply(campaign_config, keys: None) -> None:
    with FakeAnthropic(engineer) as server:
        # First call: a 429 the SDK retries after the server's retry-after; third call: a reply with no code.
        server.script(Status(429, retry_after=0.05), Reply(engineer_first(server)), Reply("I would rather not."))
        # Four positions: the KEEP, the REJECT, the rejected agent's next candidate (told of the REJECT) and the
        # other agent's next (told of its KEEP, through memory).
        config = campaign_config(agents=2, budget=4, plateau=None, model="anthropic:claude-haiku-4-5",
                                 base_url=server.url, provider_retries=2)
        summary = await Campaign(config).run()
    run_dir = Path(summary.run_dir)
    assert summary.candidates == 4 and summary.stop_reason == "candidate budget spent"
    decided = events_of(run_dir, CandidateDecided)
    rejects = [d for d in decided if d.decision == "REJECT"]
    assert len(rejects) == 1 and "no usable candidate" in rejects[0].reason and "fenced python" in rejects[0].reason
    assert any(d.decision == "KEEP" and d.agent_id != "seed" for d in decided)
    statuses = [r["path"] for r in server.requests]
    assert statuses.count("/v1/messages") == len(server.requests)
    assert all("sk-ant-test" in (r["headers"].get("x-api-key") or r["headers"].get("authorization") or "")
               for r in server.requests)
    cached_prefix = [r["body"]["system"][0].get("cache_control") for r in server.requests if r["body"]]
    assert all(c == {"type": "ephemeral"} for c in cached_prefix)
    # The agent hears about the REJECT in its next request.
    assert any("REJECT: no usable candidate" in request_text(r["body"]) for r in server.requests if r["body"])
    assert_requests_carry_the_context(server)
    assert_usage_matches_the_server(summary, server, "claude-haiku-4-5")
    reflections = [e for e in events_of(run_dir, ProviderCalled) if e.purpose == "reflect"]
    assert reflections and all("Summary:" in e.request for e in reflections)


def engineer_first(server: FakeLLMServer) -> str:
    """The reply to the first request (scripted replies do not see the request, so build it from the seed)."""
    seed = (SCALE / "seed.py").read_text()
    return engineer({"messages": [{"content": f"# Your working kernel\n```python\n{seed}```"}]})


async def test_openai_campaign_survives_a_server_error_and_a_timeout(campaign_config, keys: None) -> None:
    with FakeOpenAI(engineer) as server:
        # A 500 and a reply slower than the client's timeout, with no SDK retries: each fails its agent, which
        # is relaunched after a pause without spending a candidate position.
        server.script(Status(500), Delay(3.0, Reply(engineer_first(server))))
        # Four positions: two candidates per relaunched agent, the second told of the first through memory.
        config = campaign_config(agents=2, budget=4, plateau=None, model="openai:gpt-4.1", base_url=server.url,
                                 provider_retries=0, provider_timeout_s=1.0)
        summary = await Campaign(config).run()
    run_dir = Path(summary.run_dir)
    assert summary.candidates == 4 and summary.stop_reason == "candidate budget spent"
    failures = events_of(run_dir, AgentFailed)
    assert len(failures) == 2 and all(f.relaunch for f in failures)
    assert any("500" in f.error for f in failures) and any("timed out" in f.error for f in failures)
    assert all(r["headers"].get("authorization") == "Bearer sk-openai-test" for r in server.requests)
    assert_requests_carry_the_context(server)
    assert_usage_matches_the_server(summary, server, "gpt-4.1")


async def test_a_bad_key_stops_the_campaign_with_the_reason(campaign_config, keys: None) -> None:
    with FakeAnthropic(engineer) as server:
        server.script(*[Status(401, message="invalid x-api-key")] * 4)
        config = campaign_config(agents=2, budget=6, model="anthropic:claude-haiku-4-5", base_url=server.url)
        summary = await Campaign(config).run()
    assert summary.stop_reason.startswith("provider error: anthropic answered 401: invalid x-api-key")
    assert summary.candidates == 0


async def test_token_budget_stops_the_campaign(campaign_config, keys: None) -> None:
    with FakeOpenAI(engineer) as server:
        config = campaign_config(agents=1, budget=10, model="openai:gpt-4.1", base_url=server.url, max_tokens=400)
        summary = await Campaign(config).run()
    assert summary.stop_reason.startswith("token budget spent")
    assert summary.candidates < 10 and summary.usage.input_tokens + summary.usage.output_tokens >= 400


@pytest.mark.heavy
async def test_replay_reruns_a_recorded_campaign_without_network(campaign_config, keys: None) -> None:
    with FakeOpenAI(engineer) as server:
        config = campaign_config(agents=2, budget=4, plateau=None, model="openai:gpt-4.1", base_url=server.url)
        recorded = await Campaign(config).run()
    replay = campaign_config(agents=2, budget=4, plateau=None, model=f"replay:{recorded.run_dir}")
    replayed = await Campaign(replay).run()

    def proposals(run_dir: str) -> dict[str, list[str]]:
        by_agent: dict[str, list[str]] = {}
        for event in events_of(Path(run_dir), CandidateProposed):
            by_agent.setdefault(event.agent_id, []).append(event.source)
        return by_agent

    assert proposals(replayed.run_dir) == proposals(recorded.run_dir)
    assert replayed.usage.input_tokens == 0


def test_cli_runs_against_an_openai_compatible_server(tmp_path: Path) -> None:
    """`arcengine run --model openai:NAME --base-url URL` with no API key at all, as with a local vLLM."""
    with FakeOpenAI(engineer) as server:
        env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("OPENAI", "ANTHROPIC"))}
        completed = subprocess.run(
            [sys.executable, "-m", "arcengine.cli", "run", str(SCALE), "--model", "openai:local-coder",
             "--base-url", server.url, "--agents", "1", "--budget", "2", "--device", "cpu",
             "--out", str(tmp_path), "--json"],
            capture_output=True, text=True, timeout=600, env=env)
    assert completed.returncode == 0, completed.stderr[-2000:]
    summary = json.loads(completed.stdout)
    assert summary["candidates"] == 2 and summary["provider"] == "openai:local-coder"
    assert summary["usage"]["input_tokens"] > 0 and summary["cost_known"] is False
    assert all(r["body"].get("max_tokens") for r in server.requests if r["body"])  # what local servers take


async def test_malformed_json_is_a_reject_with_the_reason(campaign_config, keys: None) -> None:
    """Malformed JSON from the server is a REJECT with the reason, like a reply without code."""
    with FakeOpenAI(engineer) as server:
        server.script(Malformed())
        config = campaign_config(agents=1, budget=2, plateau=None, model="openai:gpt-4.1", base_url=server.url,
                                 provider_retries=0)
        summary = await Campaign(config).run()
    decided = [d for d in events_of(Path(summary.run_dir), CandidateDecided) if d.agent_id != "seed"]
    assert decided[0].decision == "REJECT" and "malformed" in decided[0].reason
    assert summary.candidates == 2


async def test_a_key_quoted_by_the_provider_appears_nowhere(campaign_config, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "sk-canary-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    with FakeOpenAI(engineer) as server:
        server.script(Status(401, message=f"Incorrect API key provided: {canary}"))
        summary = await Campaign(campaign_config(agents=1, budget=2, model="openai:gpt-4.1",
                                                 base_url=server.url)).run()
    assert "OPENAI_API_KEY redacted" in summary.stop_reason and canary not in summary.model_dump_json()
    files = [path for path in Path(summary.run_dir).rglob("*") if path.is_file()]
    assert any(path.name == "events.jsonl" for path in files) and any(path.name == "engine.log" for path in files)
    for path in files:
        assert canary.encode() not in path.read_bytes(), f"the key leaked into {path}"
