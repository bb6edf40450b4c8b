"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = REPO_ROOT / "snapshots"


@pytest.fixture
def capture_path() -> Callable[[str], Path]:
    """``capture_path(name)``: the bundled capture ``snapshots/<name>``."""

    def path(name: str) -> Path:
        return SNAPSHOTS / name

    return path
