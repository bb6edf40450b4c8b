"""Lines of (text, role) parts drawn straight to a Strip, for widgets that use the Line API.

Panels and bars draw a few styled runs per line and repaint every tick. Going through a
Rich ``Text`` and Textual's visual pipeline costs about a millisecond a line; segments built
here from cached role styles cost a few microseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from gputop.ui.render.gauges import BARS

SINGLE_CELL = frozenset(
    BARS
    + "·…─━│●■‖▶⚠┤└"
    + "".join(map(chr, range(32, 127)))
    + "".join(map(chr, range(0x2800, 0x2900)))
)
"""Characters gputop draws that are known to be one cell wide: printable ASCII and the
block, rule and mark characters of its lines (a sparkline's run holds both), and the
braille cells and scale rules of the panels' charts."""


def cell_width(text: str) -> int:
    """Cells ``text`` takes; quick for what gputop draws (Rich's general measure of block
    characters costs more than the rest of a line)."""
    if text.isascii() or SINGLE_CELL.issuperset(text):
        return len(text)
    return cell_len(text)


def line_strip(
    parts: Iterable[tuple[str, str]], styles: Mapping[str, Style], width: int, fill: Style
) -> Strip:
    """``parts`` styled by role, cut or padded with ``fill`` to exactly ``width`` cells
    (callers fit their lines first: ``panel_lines.fit_line`` cuts with an ellipsis)."""
    segments = [Segment(text, styles[role]) for text, role in parts if text]
    used = sum(cell_width(segment.text) for segment in segments)
    # What Strip.crop_extend(0, width, fill) gives, without its cache: a line that already
    # fits is its own answer there, a reference cycle per line that only the collector frees.
    if used < width:
        return Strip([*segments, Segment(" " * (width - used), fill)], width)
    strip = Strip(segments, used)
    return strip.crop(0, width) if used > width else strip


def _cells(parts: Iterable[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """(character, role) per cell of a line drawn ``width`` cells wide; a wide character's
    second cell is ("", role), padding is (" ", "")."""
    cells: list[tuple[str, str]] = []
    for text, role in parts:
        if text.isascii() or SINGLE_CELL.issuperset(text):
            cells += [(char, role) for char in text]
            continue
        for char in text:
            cells.append((char, role))
            if cell_width(char) == 2:
                cells.append(("", role))
    del cells[width:]
    cells.extend([(" ", "")] * (width - len(cells)))
    return cells


SPAN_GAP = 4
"""Unchanged cells between two changes of a line that are sent again rather than moving the
cursor over them: a move costs about 7 bytes, a cell 1 to 3 (a bar cell is 3 in UTF-8)."""


def changed_spans(
    old: Iterable[tuple[str, str]], new: Iterable[tuple[str, str]], width: int
) -> list[tuple[int, int]]:
    """Each run of cells, (first, end), in which line ``new`` drawn ``width`` wide differs
    from ``old``; runs closer than ``SPAN_GAP`` cells are one. A value and the newest cell of
    its sparkline at the other end of the line are two runs, not the whole sparkline."""
    old, new = tuple(old), tuple(new)
    if _same_shape(old, new):
        return _changed_chars(old, new, width)
    before, after = _cells(old, width), _cells(new, width)
    spans: list[tuple[int, int]] = []
    for x in range(width):
        if before[x] == after[x]:
            continue
        if spans and x - spans[-1][1] <= SPAN_GAP:
            spans[-1] = (spans[-1][0], x + 1)
        else:
            spans.append((x, x + 1))
    return spans


def _same_shape(old: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]]) -> bool:
    """Whether two lines have the same roles over the same runs of one-cell characters (a
    chart's row from one tick to the next): then they differ where their characters do."""
    if len(old) != len(new):
        return False
    for (before, role), (after, other) in zip(old, new, strict=True):
        if role != other or len(before) != len(after):
            return False
        if before != after and not (
            (before.isascii() or SINGLE_CELL.issuperset(before))
            and (after.isascii() or SINGLE_CELL.issuperset(after))
        ):
            return False
    return True


def _changed_chars(
    old: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]], width: int
) -> list[tuple[int, int]]:
    """``changed_spans`` of two lines of the same shape: only the parts that differ are
    looked into, character by character (they are one cell each: ``_same_shape``); a part
    that stayed moves the ones after it by its cells, which a wide character makes two."""
    spans: list[tuple[int, int]] = []
    start = 0
    for (before, _), (after, _) in zip(old, new, strict=True):
        if start >= width:
            break
        if before != after:
            for offset in range(min(len(before), width - start)):
                if before[offset] == after[offset]:
                    continue
                x = start + offset
                if spans and x - spans[-1][1] <= SPAN_GAP:
                    spans[-1] = (spans[-1][0], x + 1)
                else:
                    spans.append((x, x + 1))
        start += cell_width(before)
    return spans


def role_styles(
    widget: Widget, component: str, roles: Iterable[str], styled_by: Widget | None = None
) -> dict[str, Style]:
    """The style of each role: the widget's own style plus the ``<component>--<role>``
    component style of ``styled_by`` (the widget itself by default); ``""`` is the widget's
    own style, for padding.

    Resolving a component style walks the CSS, so callers keep the table until their styles
    change (``notify_style_update``): Textual empties its own cache on every refresh.
    """
    base = widget.rich_style
    source = widget if styled_by is None else styled_by
    styles = {
        role: base + source.get_component_rich_style(f"{component}--{role}", partial=True)
        for role in roles
    }
    styles[""] = base
    return styles
