"""The panel's line charts as plain values: the braille line, where groups sit, the time
axis, how four charts are laid out, and which rows the screen gives them."""

from __future__ import annotations

import itertools
import math
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from gputop.history import HistoryStore, Metric
from gputop.model import GpuSample, Memory, Power, Snapshot, Temperature, Utilization
from gputop.ui.render.gauges import SPARK_TICKS, Gauge, Level, bucketed, gauges
from gputop.ui.render.panel_charts import (
    CHART_METRICS,
    MIN_CHART_ROWS,
    ChartData,
    Drawn,
    Line,
    arrangement,
    braille_plot,
    cell_times,
    chart_block,
    place_dots,
    stats_text,
    time_axis,
)
from gputop.ui.screens.main_layout import MIN_LOWER_ROWS, TABLE_SHARE, chart_rows
from gputop.ui.widgets.line_strip import SPAN_GAP, changed_spans
from support.apps import START

GIB = 1024**3
NAN = math.nan


def card(util: float = 50.0) -> GpuSample:
    return GpuSample(
        index=0,
        name="NVIDIA H200",
        utilization=Utilization(gpu=util),
        memory=Memory(total=140 * GIB, used=32 * GIB),
        power=Power(draw=690.0, limit=700.0),
        temperature=Temperature(gpu=60.0, slowdown=90.0),
    )


def dots_of(row: str, column: int) -> int:
    """The dot bits of the braille cell at ``column`` (0 for a blank)."""
    char = row[column]
    return 0 if char == " " else ord(char) - 0x2800


# -- the braille line ---------------------------------------------------------------------


def test_a_flat_line_sits_on_one_dot_row() -> None:
    rows = braille_plot([0.0] * 8, 4, 2, 100.0)
    assert rows[0] == "    "
    # The lowest dots of both columns of every cell: ⣀.
    assert rows[1] == "⣀⣀⣀⣀"
    top = braille_plot([100.0] * 8, 4, 2, 100.0)
    assert top == ["⠉⠉⠉⠉", "    "]


def test_a_jump_is_joined_by_a_vertical_run_in_the_later_column() -> None:
    rows = braille_plot([0.0, 100.0], 1, 2, 100.0)
    # Left column: its bottom dot; right column: every dot from one above that to the top.
    assert dots_of(rows[1], 0) == 0x40 | 0x08 | 0x10 | 0x20
    assert dots_of(rows[0], 0) == 0x08 | 0x10 | 0x20 | 0x80


def test_a_gap_breaks_the_line_and_values_past_the_scale_are_clipped() -> None:
    rows = braille_plot([0.0, NAN, 100.0, 250.0], 2, 1, 100.0)
    assert dots_of(rows[0], 0) == 0x40  # the dot before the gap, nothing after it
    # After the gap the line starts again without a run up from 0; 250 sits at the top.
    assert dots_of(rows[0], 1) == 0x01 | 0x08


def test_groups_keep_their_cells_as_the_plot_grows() -> None:
    # Groups 0..4: the newest (4, even) begins a cell, whose right half stays empty.
    first = place_dots([1.0, 2.0, 3.0, 4.0, 5.0], 4, 3)
    assert first[:5] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert math.isnan(first[5])
    # One group later (5, odd) it fills that right half; the cells before have not moved.
    assert place_dots([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 5, 3) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # And the one after starts a new cell: everything moves one cell left.
    assert place_dots([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], 6, 3)[:5] == [3.0, 4.0, 5.0, 6.0, 7.0]


# -- the time axis ------------------------------------------------------------------------


def test_the_axis_marks_whole_minutes_back_from_the_newest_cell() -> None:
    # One tick a second: a cell is two groups of five ticks, ten seconds.
    ticks = 600
    times = array("d", [1000.0 + t for t in range(ticks)])
    newest_group = (ticks - 1) // SPARK_TICKS
    starts = cell_times(times, ticks, newest_group, 50)
    assert starts[-1] == 1000.0 + 590
    assert all(b - a == 10.0 for a, b in itertools.pairwise(starts))
    axis = time_axis(starts, 50)
    assert len(axis) == 50
    # Every label ends under the cell that long before the newest one (12 cells a 2 min).
    assert axis.index("-2m") + 2 == 49 - 12
    assert axis.index("-4m") + 2 == 49 - 24
    assert "-1m" not in axis  # labels at least MIN_LABEL_GAP cells apart: 2 min steps


def test_a_young_history_gets_closer_labels_rather_than_none() -> None:
    ticks = 90
    times = array("d", [1000.0 + t for t in range(ticks)])
    starts = cell_times(times, ticks, (ticks - 1) // SPARK_TICKS, 50)
    axis = time_axis(starts, 50)
    assert axis.index("-1m") + 2 == 49 - 6
    assert "-2m" not in axis  # before the history began: no mark there


def test_an_axis_without_times_is_a_bare_rule() -> None:
    starts = cell_times(array("d", [NAN] * 100), 100, 19, 20)
    assert time_axis(starts, 20) == "─" * 20


# -- the four charts ----------------------------------------------------------------------


def chart_data(values: list[float], end: int | None = None) -> ChartData:
    series = array("f", values)
    end = len(values) if end is None else end
    means = bucketed(series, SPARK_TICKS, end, 1000)
    times = array("d", [1000.0 + t for t in range(len(values))])
    return ChartData(
        {metric: means for metric in CHART_METRICS},
        {metric: series for metric in CHART_METRICS},
        times,
        end,
    )


def plain(line: tuple[tuple[str, str], ...]) -> str:
    return "".join(text for text, _ in line)


def test_four_charts_fill_their_block_exactly() -> None:
    block = chart_block(gauges(card()), chart_data([50.0] * 300), 116, 27, {})
    assert len(block) == 27
    assert {len(plain(line)) for line in block} == {116}
    text = "\n".join(plain(line) for line in block)
    for title in ("GPU utilization", "Memory used", "Power draw", "Temperature"):
        assert title in text
    # Their scales are the gauges': 100 %, the memory, the power limit, the slowdown.
    for top in ("100%┤", "140G┤", "700W┤", "90C┤"):
        assert top in text
    assert "avg 50% · max 50%" in text


def test_a_chart_of_values_not_reported_says_so() -> None:
    block = chart_block(gauges(card()), chart_data([NAN] * 100), 116, 12, {})
    title = plain(block[0])
    assert title.count("n/a") == 2  # both charts of the first band
    assert stats_text(Metric.POWER, [NAN, NAN]) == "n/a"


def test_a_chart_is_drawn_again_only_when_what_it_shows_changed() -> None:
    drawn: Drawn = {}
    values = [float(t % 100) for t in range(296)]  # 59 whole groups, the newest (58) even
    first = chart_block(gauges(card()), chart_data(values), 116, 27, drawn)
    kept = {index: lines for index, (_, lines) in drawn.items()}
    # The next ticks fill group 59: the charts show whole groups only, nothing changes.
    for end in (297, 298, 299):
        values.append(float(end % 100))
        assert chart_block(gauges(card()), chart_data(values), 116, 27, drawn) == first
        assert all(drawn[index][1] is kept[index] for index in kept)  # not drawn again
    # Group 59 is whole: it fills the right half of the newest cell, nothing else moves.
    values.append(99.0)
    newer = chart_block(gauges(card()), chart_data(values), 116, 27, drawn)
    assert all(drawn[index][1] is not kept[index] for index in kept)
    for old, new in zip(first, newer, strict=True):
        a, b = plain(old), plain(new)
        changed = [x for x in range(len(a)) if a[x] != b[x]]
        if changed and "avg" not in a:
            # The newest cell of the left and of the right chart, nothing else.
            assert set(changed) <= {55, 115}, (a, b)


def test_a_plot_drawn_from_the_last_one_is_the_plot_drawn_afresh() -> None:
    # Tick by tick through group and cell boundaries, with gaps and jumps: the plot kept
    # from the last tick and patched is, every time, the plot drawn from nothing.
    values = [NAN if t % 37 < 3 else float((t * 7) % 101) for t in range(400)]
    drawn: Drawn = {}
    for end in range(300, 340):
        data = chart_data(values[:end])
        kept = chart_block(gauges(card()), data, 116, 27, drawn)
        assert kept == chart_block(gauges(card()), data, 116, 27, {}), end


def cell_spans(old: Line, new: Line, width: int) -> list[tuple[int, int]]:
    """What ``changed_spans`` says, worked out cell by cell (a wide character is two)."""

    def cells(line: Line) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for text, role in line:
            for char in text:
                found.append((char, role))
                if cell_len(char) == 2:
                    found.append(("", role))
        found = found[:width]
        return found + [(" ", "")] * (width - len(found))

    before, after = cells(old), cells(new)
    spans: list[tuple[int, int]] = []
    for x in range(width):
        if before[x] != after[x]:
            if spans and x - spans[-1][1] <= SPAN_GAP:
                spans[-1] = (spans[-1][0], x + 1)
            else:
                spans.append((x, x + 1))
    return spans


@given(st.data())
@settings(deadline=None)
def test_rows_of_one_shape_change_where_their_cells_do(data: st.DataObject) -> None:
    # A chart's row from one tick to the next: the same parts, some characters changed.
    alphabet = st.sampled_from(" ⠁⡀⣿⢸─┤x")
    texts = data.draw(st.lists(st.text(alphabet, min_size=0, max_size=12), max_size=6))
    roles = [data.draw(st.sampled_from(["dim", "spark", "crit"])) for _ in texts]
    old: Line = tuple(zip(texts, roles, strict=True))
    changed = ["".join(data.draw(st.sampled_from([char, "⣀"])) for char in text) for text in texts]
    new: Line = tuple(zip(changed, roles, strict=True))
    width = data.draw(st.integers(0, 80))
    assert changed_spans(old, new, width) == cell_spans(old, new, width)


def test_the_arrangement_suits_the_block() -> None:
    assert arrangement(116, 27) == (2, 2)  # one GPU at 120x40
    assert arrangement(116, 14) == (2, 2)  # one of two GPUs at 120x50
    assert arrangement(196, 10) == (4, 1)  # a wide, low block
    assert arrangement(40, 30) == (1, 4)  # narrow and tall
    assert arrangement(116, MIN_CHART_ROWS - 1) is None
    assert arrangement(60, 6) is None  # four charts side by side would be slivers


# -- which rows the screen gives the charts -----------------------------------------------


def test_a_few_processes_get_their_rows_and_the_charts_the_rest() -> None:
    # One GPU at 120x40, four processes: status line, titles, four rows.
    rows = chart_rows(120, 40, [0], wide=False, replaying=False, table_rows=6)
    body = 40 - 2
    assert rows + 2 + 6 == body
    # Two GPUs at 120x50: the rows left are shared by the two panels.
    rows = chart_rows(120, 50, [0, 0], wide=False, replaying=False, table_rows=4)
    assert 2 * (rows + 2) + 4 in (48, 47)


def test_many_processes_keep_a_table_they_can_scroll_in() -> None:
    body = 40 - 2
    rows = chart_rows(120, 40, [0], wide=False, replaying=False, table_rows=200)
    table = body - rows - 2
    assert table == max(MIN_LOWER_ROWS, math.floor(body * TABLE_SHARE))
    # A small terminal leaves them the whole lower part: no charts.
    assert chart_rows(100, 24, [0], wide=False, replaying=False, table_rows=200) == 0


def test_more_gpus_keep_their_panels_as_they_were() -> None:
    assert chart_rows(200, 200, [0] * 5, wide=True, replaying=False, table_rows=4) == 0
    assert chart_rows(120, 40, [0] * 4, wide=False, replaying=False, table_rows=10) == 0
    assert chart_rows(120, 80, [0] * 4, wide=False, replaying=False, table_rows=10) > 0


def test_listed_mig_devices_come_out_of_the_charts_rows() -> None:
    plain_rows = chart_rows(120, 40, [0], wide=False, replaying=False, table_rows=6)
    assert chart_rows(120, 40, [4], wide=False, replaying=False, table_rows=6) == plain_rows
    assert chart_rows(120, 24, [9], wide=False, replaying=False, table_rows=6) == 0


# -- the history hands the times the axis is labelled by ----------------------------------


def test_each_view_carries_the_times_of_its_ticks() -> None:
    from datetime import timedelta

    store = HistoryStore(capacity=100, metrics=(Metric.GPU_UTIL,))
    for tick in range(30):
        moment = START + timedelta(seconds=2 * tick)
        store.append(Snapshot(timestamp=moment, gpus=(card(float(tick)),)))
    view = store.view(10)
    assert len(view.times) == 10
    assert view.times[-1] == (START + timedelta(seconds=58)).timestamp()
    assert view.times[0] == (START + timedelta(seconds=40)).timestamp()
    assert list(view.series("index:0", Metric.GPU_UTIL)) == [float(t) for t in range(20, 30)]


def test_gauge_levels_colour_the_charts() -> None:
    hot = Gauge("PWR", "700W", Level.CRIT, 700.0)
    block = chart_block([hot, hot, hot, hot], chart_data([690.0] * 100), 116, 12, {})
    roles = {role for line in block for _, role in line}
    assert "crit" in roles and "spark" not in roles


@given(st.data())
@settings(deadline=None)
def test_wide_characters_that_stay_move_the_cells_after_them(data: st.DataObject) -> None:
    # A panel line whose GPU or pod name is wide (CJK, full-width) and whose value moves:
    # the change is as many cells along as the name is wide, not as many characters.
    narrow = st.tuples(st.text(st.sampled_from(" ⣿x1%"), max_size=8), st.just(True))
    wide = st.tuples(st.text(st.sampled_from("名前漢字ｘ"), min_size=1, max_size=4), st.just(False))
    parts = data.draw(st.lists(st.one_of(narrow, wide), max_size=6))
    roles = [data.draw(st.sampled_from(["name", "value"])) for _ in parts]
    old: Line = tuple((text, role) for (text, _), role in zip(parts, roles, strict=True))
    changed = [
        "".join(data.draw(st.sampled_from([char, "⣀"])) for char in text) if moves else text
        for text, moves in parts
    ]
    new: Line = tuple(zip(changed, roles, strict=True))
    width = data.draw(st.integers(0, 60))
    assert changed_spans(old, new, width) == cell_spans(old, new, width)


def test_a_value_after_a_wide_name_changes_where_it_is_drawn() -> None:
    old: Line = (("名前 ", "name"), ("12%", "value"))
    new: Line = (("名前 ", "name"), ("13%", "value"))
    assert changed_spans(old, new, 40) == [(6, 7)]  # 名前 is 5 cells, then "1", then "2"
    assert changed_spans(old, new, 6) == []  # the change is past the edge
