"""``line_strip``: a line of (text, role) parts drawn to exactly the width asked, as
``Strip.crop_extend`` would draw it, without a strip that refers to itself."""

from __future__ import annotations

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gputop.ui.widgets.line_strip import line_strip
from support.garbage import cyclic_garbage

STYLES = {"name": Style(bold=True), "value": Style(color="green"), "": Style()}
FILL = Style(bgcolor="black")
PARTS = [("GPU 0 ", "name"), ("漢字 ", "value"), ("42C", "value")]
"""13 cells: two wide characters among one-cell ones."""


@pytest.mark.parametrize("width", [0, 1, 7, 8, 12, 13, 14, 40])
def test_a_line_is_what_crop_extend_draws(width: int) -> None:
    line = line_strip(PARTS, STYLES, width, FILL)
    whole = Strip([Segment(text, STYLES[role]) for text, role in PARTS])
    expected = whole.crop_extend(0, width, FILL)
    assert line.cell_length == width
    assert list(line) == list(expected)
    assert line.text == expected.text


@pytest.mark.parametrize("width", [12, 13, 14])
def test_a_line_leaves_nothing_for_the_collector(width: int) -> None:
    # 13 is the line's own width: Strip.crop_extend answered with the strip itself and kept
    # that answer in the strip's cache, a cycle only the collector frees.
    with cyclic_garbage() as garbage:
        for _ in range(3):
            line = line_strip(PARTS, STYLES, width, FILL)
            assert line.cell_length == width
        del line
    assert garbage.of_type(Strip) == []
