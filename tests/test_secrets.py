"""A canary key in a campaign's environment: candidates hunt for it (their own environment, every process's
/proc environment block), the provider's errors quote it; it must appear nowhere afterwards, and the candidates
must not have found it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import SCALE
from tests.providers.fake_llm import FakeOpenAI, Reply, Status

CANARY = "sk-canary-5f1e0c9a7b3d2e8f"

THIEF = '''
import glob
import os


def _hunt():
    found = [f"{k}={v}" for k, v in os.environ.items()]
    for path in glob.glob("/proc/[0-9]*/environ"):  # the engine's, the zygote's, anyone's
        try:
            with open(path, "rb") as handle:
                found.append(handle.read().decode(errors="replace"))
        except OSError:
            pass
    with open(LOOT, "a") as loot:
        loot.write("\\n".join(found) + "\\n")
    print("\\n".join(found))
    return len(found)


HUNTED = _hunt()
'''


def test_a_canary_key_is_found_nowhere(tmp_path: Path) -> None:
    loot = tmp_path / "loot.txt"
    seed = (SCALE / "seed.py").read_text()
    thief = f"Strategy: look around\nRationale: curiosity\n```python\nLOOT = {str(loot)!r}\n{THIEF}\n{seed}```\n"
    config = tmp_path / "campaign.toml"
    config.write_text("provider_retries = 0\n")
    with FakeOpenAI() as server:
        # A kernel that hunts, an error that quotes the key (the agent is relaunched), the same kernel again.
        server.script(Reply(thief), Status(500, message=f"upstream rejected key {CANARY}"), Reply(thief))
        environment = {**os.environ, "OPENAI_API_KEY": CANARY, "MY_SERVICE_TOKEN": CANARY + "-2"}
        done = subprocess.run(
            [sys.executable, "-m", "arcengine.cli", "run", str(SCALE), "--agents", "1", "--budget", "2",
             "--model", "openai:gpt-4.1", "--base-url", server.url, "--device", "cpu", "--config", str(config),
             "--out", str(tmp_path / "runs"), "--leaderboard"],
            env=environment, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert loot.is_file() and "PATH=" in loot.read_text()  # the thief ran and saw environments
    assert CANARY not in loot.read_text(), "a candidate found the key"
    assert CANARY not in done.stdout + done.stderr
    files = [path for path in (tmp_path / "runs").rglob("*") if path.is_file()]
    assert any(path.name == "events.jsonl" for path in files)
    for path in files:
        assert CANARY.encode() not in path.read_bytes(), f"the key leaked into {path}"
    run_dir = next((tmp_path / "runs").iterdir())
    exported = subprocess.run([sys.executable, "-m", "arcengine.cli", "export", str(run_dir), "--format", "python",
                               "--out", str(tmp_path / "best.py")],
                              env=environment, capture_output=True, text=True, check=False)
    assert exported.returncode == 0, exported.stderr
    assert CANARY not in (tmp_path / "best.py").read_text()
