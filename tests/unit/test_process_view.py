"""The process table's view (columns, sort, filter, pods, status) and its column widths, as
plain values: no app runs here."""

from __future__ import annotations

import pytest

from gputop.model import ProcessSample
from gputop.model.owner import Owner
from gputop.ui.render import column_widths
from gputop.ui.render.column_widths import (
    COMMAND,
    ColumnWidths,
    OtherColumns,
    cell_width,
    column_width,
    fit_commands,
)
from gputop.ui.render.process_rows import (
    COLUMN_INDEX,
    COLUMNS,
    GroupRow,
    ProcessRow,
    TableRow,
    TypeFilter,
    build_row,
)
from gputop.ui.render.process_view import CONTAINER_WIDTH, NARROW_WIDTH, ProcessView

NOW = 1_700_000_000.0
MIB = 1024**2


def row(pid: int, gpu: int = 0, **fields: object) -> ProcessRow:
    return build_row(gpu, ProcessSample(pid=pid, **fields), NOW)  # type: ignore[arg-type]


def keys(lines: list[TableRow]) -> list[str]:
    return [line.key_text for line in lines]


def column_keys(view: ProcessView, width: int | None) -> list[str]:
    return [COLUMNS[index].key for index in view.columns_for(width)]


def test_columns_narrow_drop_the_host_side_ones_and_owners_come_with_their_processes() -> None:
    view = ProcessView()
    wide = column_keys(view, None)
    assert "cpu" in wide and "host_memory" in wide
    assert not {"pod", "container", "job"} & set(wide)
    narrow = column_keys(view, NARROW_WIDTH - 1)
    assert "cpu" not in narrow and "host_memory" not in narrow
    assert "cpu" in column_keys(view, NARROW_WIDTH)
    view.owners = frozenset({"pod", "container"})
    assert {"pod", "container"} <= set(column_keys(view, CONTAINER_WIDTH))
    below = column_keys(view, CONTAINER_WIDTH - 1)
    assert "pod" in below and "container" not in below


def test_a_hidden_sort_column_gives_way_to_gpu_memory_and_comes_back_with_its_column() -> None:
    view = ProcessView()
    cpu = COLUMN_INDEX["cpu"]
    view.sort_by(cpu, reverse=False)
    assert view.set_columns(view.columns_for(NARROW_WIDTH - 1))
    assert view.sort_column == COLUMN_INDEX["gpu_memory"]
    assert view.sort_reverse is COLUMNS[view.sort_column].descending
    assert not view.set_columns(view.columns_for(NARROW_WIDTH - 1))
    assert view.set_columns(view.columns_for(None))
    assert (view.sort_column, view.sort_reverse) == (cpu, False)


def test_sort_by_wraps_and_takes_the_column_natural_order() -> None:
    view = ProcessView()
    view.sort_by(len(COLUMNS) + COLUMN_INDEX["pid"])
    assert view.sort_column == COLUMN_INDEX["pid"]
    assert view.sort_reverse is COLUMNS[COLUMN_INDEX["pid"]].descending
    assert view.title(view.sort_column).endswith(("▲", "▼"))
    assert view.title(COLUMN_INDEX["gpu"]).endswith(" ")


def test_lines_are_filtered_then_sorted() -> None:
    view = ProcessView()
    view.rows = [
        row(1, memory_used=10 * MIB, name="python train.py", type="C"),
        row(2, memory_used=30 * MIB, name="Xorg", type="G"),
        row(3, memory_used=20 * MIB, name="python eval.py", type="C"),
    ]
    total, lines = view.lines()
    assert total == 3
    assert [line.process.pid for line in lines if isinstance(line, ProcessRow)] == [2, 3, 1]
    view.filter_text = "python"
    total, lines = view.lines()
    assert (total, keys(lines)) == (2, [view.rows[2].key_text, view.rows[0].key_text])
    view.filter_text = ""
    view.type_filter = TypeFilter.GRAPHICS
    assert keys(view.lines()[1]) == [view.rows[1].key_text]


def test_grouped_lines_show_a_pod_and_its_processes_only_when_expanded() -> None:
    pod = Owner(pod="trainer-0", namespace="ml")
    view = ProcessView()
    view.rows = [row(1, owner=pod), row(2, owner=pod), row(3)]
    view.grouped = True
    total, lines = view.lines()
    groups = [line for line in lines if isinstance(line, GroupRow)]
    assert total == 3 and len(groups) == 1 and len(lines) == 2
    view.toggle_group(groups[0].key_text)
    assert len(view.lines()[1]) == 4
    view.toggle_group(groups[0].key_text)
    assert len(view.lines()[1]) == 2


def test_status_says_what_is_shown_and_how() -> None:
    pod = Owner(pod="trainer-0")
    view = ProcessView()
    view.rows = [row(1, owner=pod), row(2, owner=pod), row(3, foreign=True)]
    assert view.status(3, [], readonly=False) == (
        "3 of 3 processes  ·  sort GPU MEM ▼  ·  type all  ·  1 not in this PID namespace"
    )
    view.grouped = True
    view.filter_text = "x"
    lines = view.lines()[1]
    status = view.status(1, lines, readonly=True)
    assert "1 of 3 processes" in status
    assert "filter “x”" in status
    assert status.endswith("read-only")
    view.filter_text = ""
    assert "  ·  1 group  ·  " in view.status(3, view.lines()[1], readonly=False)


def test_widths_are_counted_and_the_widest_follows_changes() -> None:
    gpu = COLUMN_INDEX["gpu"]
    widths = ColumnWidths([gpu])
    assert widths.widest(COMMAND) is None
    assert widths.widest(gpu) == 0
    short, long = ("0",), ("0:GPU-long",)
    widths.count(short, 1)
    widths.count(long, 1)
    assert widths.widest(gpu) == cell_width("0:GPU-long")

    class Column:
        content_width = cell_width("0:GPU-long")

    widths.change(long, short, {gpu: Column()})
    assert widths.widest(gpu) == cell_width("0")
    assert widths.refit == {gpu}
    widths.count(short, -1)
    widths.count(short, -1)
    assert widths.widest(gpu) == 0


def test_wide_characters_are_measured_in_cells() -> None:
    assert column_width(["ab", "abcd"]) == 5
    assert column_width(["数据"]) == 5
    assert column_width([]) == 0


def test_other_columns_are_measured_again_only_for_other_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    measured: list[list[str]] = []

    def counting(texts: list[str]) -> int:
        measured.append(texts)
        return column_width(texts)

    monkeypatch.setattr(column_widths, "column_width", counting)
    others = OtherColumns()
    columns = (COLUMN_INDEX["pid"], COMMAND)
    rows: list[TableRow] = [row(123456789), row(2)]
    first = others.width(columns, rows)
    assert first == max(len(COLUMNS[columns[0]].label) + 2, len(" 123456789"))
    assert measured == [["123456789", "2"]]
    # The same row objects: the last measure, the rows not looked at again.
    assert others.width(columns, list(rows)) == first
    assert len(measured) == 1
    assert others.width(columns, [row(2)]) == len(COLUMNS[columns[0]].label) + 2
    assert len(measured) == 2


def test_commands_are_cut_to_the_room() -> None:
    rows: list[TableRow] = [row(1, name="python " + "x" * 80), row(2, name="sh")]
    fitted = fit_commands(rows, 20)
    assert len(fitted[0].cells[COMMAND]) <= 20
    assert fitted[1] is rows[1]
