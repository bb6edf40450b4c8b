"""A partial repaint sends the changed span of a line, not the line from its left edge.

Textual writes a repainted region from the start of the widget's piece of the line; over ssh
every tick resent a process row's GPU, PID and USER cells for a changed TIME cell, and a GPU
row's name and memory for a moving power sparkline. ``write_changed_spans_only`` starts the
write at the styled run (segment) that holds the region's left edge.
"""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual._compositor import ChopsUpdate
from textual.strip import Strip

from gputop.ui.compat import write_changed_spans_only
from gputop.ui.widgets.line_strip import changed_span

RED, GREEN = Style(color="red"), Style(color="green")


def rendered(strip: Strip, x1: int, x2: int) -> str:
    update = ChopsUpdate([{0: strip}], [(0, x1, x2)], [[strip.cell_length]])
    return update.render_segments(Console(color_system="truecolor", width=120))


@pytest.fixture
def spans_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # Put Textual's own back afterwards, whatever other tests expect.
    monkeypatch.setattr(ChopsUpdate, "render_segments", ChopsUpdate.render_segments)
    write_changed_spans_only()


@pytest.mark.usefixtures("spans_only")
def test_a_span_in_the_middle_starts_at_its_segment() -> None:
    strip = Strip([Segment("GPU PID USER ", RED), Segment("1:41", GREEN), Segment(" cmd", RED)])
    out = rendered(strip, 13, 17)
    assert "GPU" not in out
    assert "1:41" in out and "cmd" not in out
    # The cursor goes to column 14 (1-based), where the changed segment starts.
    assert out.startswith("\x1b[1;14H")


@pytest.mark.usefixtures("spans_only")
def test_a_span_inside_a_segment_sends_that_segment_whole_from_its_start() -> None:
    strip = Strip([Segment("ab", RED), Segment("漢字xyz", GREEN)])
    out = rendered(strip, 5, 7)
    assert "ab" not in out
    # Never cut inside a segment: a wide character is not split in two.
    assert "漢字x" in out and "y" not in out
    assert out.startswith("\x1b[1;3H")


@pytest.mark.usefixtures("spans_only")
def test_a_span_from_the_left_edge_is_unchanged() -> None:
    strip = Strip([Segment("GPU PID", RED), Segment(" rest", GREEN)])
    out = rendered(strip, 0, 7)
    assert out.startswith("\x1b[1;1H") and "GPU PID" in out and "rest" not in out


def test_changed_span_of_a_panel_line() -> None:
    old = (("  0 RTX 3090 ", "name"), ("250W", "value"), (" ▁▂▃", "spark"))
    new = (("  0 RTX 3090 ", "name"), ("251W", "value"), (" ▂▃▄", "spark"))
    assert changed_span(old, new, 40) == (15, 21)
    assert changed_span(old, old, 40) is None
    # Same text in another role is a change; so is a line that got shorter (padding).
    assert changed_span(old, (("  0 RTX 3090 ", "label"), *old[1:]), 40) == (0, 13)
    assert changed_span(old, old[:2], 40) == (17, 21)
