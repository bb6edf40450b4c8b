"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputop.ui.patches import stock_names

REPO_ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = REPO_ROOT / "snapshots"


@pytest.fixture
def capture_path() -> Callable[[str], Path]:
    """``capture_path(name)``: the bundled capture ``snapshots/<name>``."""

    def path(name: str) -> Path:
        return SNAPSHOTS / name

    return path


def pytest_configure(config: pytest.Config) -> None:
    """Under ``GPUTOP_STOCK_TEXTUAL``, the baseline of a snapshot test skipped there (below)
    is unused by design: said as a warning, not failed (syrupy's ``--snapshot-warn-unused``)."""
    if stock_names() != frozenset() and hasattr(config.option, "warn_unused_snapshots"):
        config.option.warn_unused_snapshots = True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``GPUTOP_STOCK_TEXTUAL`` (CI's second run of the UI and snapshot tests), a test
    of what one of gputop's patches of Textual does (``@pytest.mark.patch("name")``) is
    skipped when that patch is off, saying so: stock Textual does not do it."""
    off = stock_names()
    if off == frozenset():
        return
    for item in items:
        for marker in item.iter_markers("patch"):
            name = str(marker.args[0])
            if off is None or name in off:
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"tests gputop's {name} patch of Textual, off under "
                        "GPUTOP_STOCK_TEXTUAL (stock Textual does not do this)"
                    )
                )
