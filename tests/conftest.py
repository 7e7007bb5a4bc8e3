"""Shared fixtures: the tiny CPU problem and campaign settings for fast engine tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from arcengine.engine.config import CampaignConfig

FIXTURES = Path(__file__).parent / "fixtures"
SCALE = FIXTURES / "scale"


@pytest.fixture
def scale_problem() -> Path:
    return SCALE


def scale_source(body: str, imports: str = "import torch") -> str:
    """A candidate for the scale fixture (y = 2x + 1) whose run() is ``body``."""
    return f"{imports}\n\n\ndef run(x):\n" + "".join(f"    {line}\n" for line in body.splitlines())


@pytest.fixture
def campaign_config(tmp_path: Path):
    def make(**overrides: object) -> CampaignConfig:
        values: dict[str, object] = {"problem": str(SCALE), "device": "cpu", "out": tmp_path / "runs",
                                     "agents": 1, "budget": 4, "candidate_timeout_s": 60.0}
        values.update(overrides)
        return CampaignConfig(**values)  # type: ignore[arg-type]

    return make


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the slowest tests first: with one worker per core they then overlap the rest of the suite instead of
    starting last and making everyone wait (marked ``heavy``). `make test` hands tests out one at a time
    (``--dist loadgroup``), so they alternate between the workers; ``--dist load`` sent the first eighth of the
    suite, every heavy test with it, to one worker."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "heavy: a test that takes half a minute or more on two cores; scheduled first")


@pytest.fixture(autouse=True)
def _candidates_may_write_the_tests_folders(tmp_path_factory: pytest.TempPathFactory,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Test candidates leave markers and loot in pytest's folders, which a guard child may not write otherwise
    (arcengine/guard/child/opens.py): the tests name them, as a user names a folder of their own."""
    monkeypatch.setenv("ARCENGINE_WRITABLE", str(tmp_path_factory.getbasetemp()))
