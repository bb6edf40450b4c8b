"""The regions Textual hands a screen to repaint on behalf of the screens under it."""

from __future__ import annotations

from typing import Any

import pytest
from textual.geometry import Region
from textual.screen import Screen


def regions_handed_to(screen: Screen[Any], monkeypatch: pytest.MonkeyPatch) -> list[Region]:
    """From now on, every region ``screen`` is asked to repaint (``Screen.refresh`` with
    regions: what Textual's compositor hands the screen on top when one under it changes)."""
    handed: list[Region] = []
    refresh = Screen.refresh

    def noted(self: Screen[Any], *regions: Region, **kwargs: Any) -> Any:
        if self is screen and regions:
            handed.extend(regions)
        return refresh(self, *regions, **kwargs)

    monkeypatch.setattr(Screen, "refresh", noted)
    return handed
