"""A partial repaint sends the changed span of a line, not the line from its left edge.

Textual writes a repainted region from the start of the widget's piece of the line; over ssh
every tick resent a process row's GPU, PID and USER cells for a changed TIME cell, and a GPU
row's name and memory for a moving power sparkline. ``write_changed_spans_only`` starts the
write at the styled run (segment) that holds the region's left edge.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.color import ColorSystem
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual._compositor import ChopsUpdate
from textual.strip import Strip

from gputop.ui.compat import write_changed_spans_only
from gputop.ui.pen import ATTRIBUTES, SGR_CODES, SGR_OFF
from support.shortcuts import changed_span

RED, GREEN = Style(color="red"), Style(color="green")
TRUECOLOR = ColorSystem.TRUECOLOR


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


# -- what reaches the terminal is what a full repaint draws -------------------------------

BOLD_WHITE = Style(bold=True, color="#e0e0e0", bgcolor="#121212")
BLUE = Style(color="#0178d4", bgcolor="#121212")


def sgr(state: tuple[frozenset[str], tuple[str, ...], tuple[str, ...]], params: str) -> Any:
    """A terminal's style after ``ESC[<params>m``: (attributes on, foreground, background)."""
    attrs, fg, bg = set(state[0]), state[1], state[2]
    codes = params.split(";") if params else ["0"]
    off = {"22": {"1", "2"}, "23": {"3"}, "24": {"4", "21"}, "25": {"5", "6"}, "27": {"7"}}
    off |= {"28": {"8"}, "29": {"9"}, "54": {"51", "52"}, "55": {"53"}}
    at = 0
    while at < len(codes):
        code = codes[at]
        if code == "0":
            attrs, fg, bg = set(), (), ()
        elif code in ("38", "48"):
            size = 4 if codes[at + 1] == "2" else 2
            color = tuple(codes[at + 1 : at + 1 + size])
            fg, bg = (color, bg) if code == "38" else (fg, color)
            at += size
        elif code.isdigit() and (30 <= int(code) <= 37 or 90 <= int(code) <= 97):
            fg = (code,)
        elif code.isdigit() and (40 <= int(code) <= 47 or 100 <= int(code) <= 107):
            bg = (code,)
        elif code == "39":
            fg = ()
        elif code == "49":
            bg = ()
        elif code in off:
            attrs -= off[code]
        else:
            attrs.add(code)
        at += 1
    return frozenset(attrs), fg, bg


CODE = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])")
RESET_STATE: Any = (frozenset(), (), ())


def paint(out: str, screen: dict[tuple[int, int], Any]) -> set[tuple[int, int]]:
    """Apply ``out`` to ``screen`` ((x, y) -> (char, style state)); the cells written."""
    state, x, y, written = RESET_STATE, 0, 0, set()
    at = 0
    while at < len(out):
        match = CODE.match(out, at)
        if match:
            params, kind = match.groups()
            if kind == "H":
                row, col = params.split(";")
                y, x = int(row) - 1, int(col) - 1
            elif kind == "m":
                state = sgr(state, params)
            at = match.end()
            continue
        char = out[at]
        screen[x, y] = (char, state)
        written.add((x, y))
        x += cell_len(char)
        at += 1
    return written


def expected(strip: Strip) -> dict[int, Any]:
    """Cell -> (char, style state) of ``strip`` as a full repaint draws it."""
    cells, x = {}, 0
    for text, style, _ in strip:
        state = (
            RESET_STATE if style is None else sgr(RESET_STATE, Strip.render_ansi(style, TRUECOLOR))
        )
        for char in text:
            cells[x] = (char, state)
            x += cell_len(char)
    return cells


STYLES = [
    None,
    BOLD_WHITE,
    BLUE,
    Style(bold=True, color="#b93c5b", bgcolor="#121212"),
    Style(dim=True, bold=True, color="#e0e0e0"),
    Style(underline=True, color="red"),
    Style(italic=True, bgcolor="#242f38"),
    # Every other attribute Rich has, each through its public property (pen.ATTRIBUTES).
    Style(reverse=True, strike=True, color="#0178d4"),
    Style(blink=True, underline2=True, overline=True),
    Style(conceal=True, frame=True, encircle=True, blink2=True, bgcolor="#121212"),
    Style(bold=False, italic=True),
]


@st.composite
def updates(draw: st.DrawFn) -> tuple[list[Strip], list[tuple[int, int, int]]]:
    lines = draw(st.integers(1, 3))
    strips, spans = [], []
    for y in range(lines):
        parts = draw(
            st.lists(
                st.tuples(st.text("ab 1▁▅█·漢", min_size=1, max_size=6), st.sampled_from(STYLES)),
                min_size=1,
                max_size=5,
            )
        )
        strip = Strip([Segment(text, style) for text, style in parts])
        strips.append(strip)
        # Regions cover whole cells: a span never ends inside a wide character.
        starts = [*sorted(expected(strip)), strip.cell_length]
        cuts = sorted(set(draw(st.lists(st.sampled_from(starts), max_size=4))))
        for x1, x2 in zip(cuts[::2], cuts[1::2], strict=False):
            if x2 > x1:
                spans.append((y, x1, x2))
    return strips, spans or [(0, 0, strips[0].cell_length)]


@pytest.mark.usefixtures("spans_only")
@given(updates())
@settings(deadline=None)
def test_every_changed_cell_gets_exactly_its_full_repaint_style(
    update: tuple[list[Strip], list[tuple[int, int, int]]],
) -> None:
    strips, spans = update
    chops = ChopsUpdate(
        [{0: strip} for strip in strips], spans, [[strip.cell_length] for strip in strips]
    )
    screen: dict[tuple[int, int], Any] = {}
    written = paint(chops.render_segments(Console(color_system="truecolor", width=120)), screen)
    wanted = {y: expected(strip) for y, strip in enumerate(strips)}
    for x, y in written:
        if screen[x, y][0] != " " or x in wanted[y]:
            assert screen[x, y] == wanted[y][x], (x, y)
    for y, x1, x2 in spans:
        for x in range(x1, x2):
            if x in wanted[y]:  # a wide character's second cell is its first's
                assert (x, y) in written


@pytest.mark.usefixtures("spans_only")
def test_colours_go_once_per_style_and_values_are_sent_alone() -> None:
    # A row of four panels' values and their sparklines' newest cells: as a tick sends them.
    line = []
    for _ in range(4):
        line += [Segment("GPU  ", BLUE), Segment(" 59%", BOLD_WHITE), Segment(" ▅▆▇", BLUE)]
    strip = Strip(line)
    spans = [(0, 13 * n + 6, 13 * n + 8) for n in range(4)]
    spans += [(0, 13 * n + 12, 13 * n + 13) for n in range(4)]
    spans.sort()
    update = ChopsUpdate([{0: strip}], spans, [[strip.cell_length]])
    out = update.render_segments(Console(color_system="truecolor", width=120))
    # Each colour once, not once per run; the "59" alone, without the cells before it.
    assert out.count("38;2;224;224;224") == 1 and out.count("38;2;1;120;212") == 1
    assert out.count("59") == 4 and "GPU" not in out and " 59" not in out


def test_the_pen_knows_each_attribute_rich_has_and_its_code() -> None:
    """The pen reads a style's attributes by name (Rich's public properties): a new one in
    Rich would go unsent, an order wrong would send another's code."""
    assert set(ATTRIBUTES) == set(Style.STYLE_ATTRIBUTES.values())
    assert len(ATTRIBUTES) == len(SGR_CODES) == len(SGR_OFF)
    for name, code in zip(ATTRIBUTES, SGR_CODES, strict=True):
        assert Style.parse(name).render("x") == f"\x1b[{code}mx\x1b[0m"
