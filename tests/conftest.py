"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

REPO_ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = REPO_ROOT / "snapshots"
TESTS = Path(__file__).resolve().parent

# Property tests: Hypothesis's "default" profile (100 examples a test) is what
# ``scripts/test`` and CI run; "thorough", for a change to a reader or a property, gives
# each test ten times that: ``pytest --hypothesis-profile thorough``. A test whose examples
# are costly (a UI run, a subprocess) sets a smaller ``max_examples`` of its own.
settings.register_profile("thorough", max_examples=1000)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the exhaustive versions of sampled tests (marked slow)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test by its directory; leave ``slow`` tests out unless ``--slow``."""
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    run_slow = bool(config.getoption("--slow"))
    for item in items:
        part = Path(str(item.path)).relative_to(TESTS).parts[0]
        if part in ("unit", "ui", "snapshot", "e2e"):
            item.add_marker(getattr(pytest.mark, part))
        if item.get_closest_marker("slow") is not None and not run_slow:
            left.append(item)
        else:
            kept.append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture
def capture_path() -> Callable[[str], Path]:
    """``capture_path(name)``: the bundled capture ``snapshots/<name>``."""

    def path(name: str) -> Path:
        return SNAPSHOTS / name

    return path
