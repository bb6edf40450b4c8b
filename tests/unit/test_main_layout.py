"""The main screen's layout as plain values: which arrangement a size gets, when MIG rows
are listed and charts drawn, and how long the process table keeps rows it stopped needing."""

from __future__ import annotations

from collections.abc import Callable

from gputop.ui.screens.main_layout import (
    TABLE_HOLD_TICKS,
    Arrangement,
    TableRoom,
    chart_rows,
    choose_layout,
    details_fit,
    plan_layout,
)


def unlisted(gpus: int) -> Callable[[], list[int]]:
    """MIG lines of ``gpus`` panels without MIG devices."""
    return lambda: [0] * gpus


def never() -> list[int]:
    raise AssertionError("MIG lines are not asked for in the compact layout")


def test_a_small_terminal_is_compact_and_its_mig_lines_are_not_worked_out() -> None:
    arrangement = plan_layout(60, 20, 8, False, never, 10)
    assert arrangement == Arrangement(compact=True, wide=False, details=False)


def test_before_any_tick_panels_neither_list_nor_chart() -> None:
    arrangement = plan_layout(200, 60, 2, False, None, 10)
    assert arrangement == Arrangement(compact=False, wide=True)


def test_full_panels_chart_with_room_and_list_mig_lines_that_fit() -> None:
    arrangement = plan_layout(120, 50, 1, False, lambda: [0], 6)
    assert not arrangement.compact and not arrangement.mig_rows
    assert arrangement.chart_rows == chart_rows(120, 50, [0], False, False, 6) > 0
    listed = plan_layout(120, 50, 1, False, lambda: [3], 6)
    assert listed.mig_rows
    assert listed.chart_rows == chart_rows(120, 50, [3], False, False, 6)
    assert listed.chart_rows <= arrangement.chart_rows
    # Too many MIG lines to list: the charts take the rows as though there were none.
    unlisted = plan_layout(120, 50, 1, False, lambda: [40], 6)
    assert not unlisted.mig_rows
    assert unlisted.chart_rows == arrangement.chart_rows


def test_the_arrangement_agrees_with_the_rules_it_is_made_of() -> None:
    for width, height, gpus in [(80, 24, 1), (120, 40, 4), (200, 60, 8), (160, 30, 2)]:
        for replaying in (False, True):
            arrangement = plan_layout(width, height, gpus, replaying, unlisted(gpus), 8)
            compact, wide = choose_layout(width, height, gpus, replaying)
            assert (arrangement.compact, arrangement.wide) == (compact, wide)
            assert arrangement.details == (compact and details_fit(height, gpus, replaying))


def test_the_table_keeps_rows_it_no_longer_needs_for_a_while() -> None:
    room = TableRoom()
    assert room.rows == 0
    room.hold(20)
    assert room.rows == 20
    for _ in range(TABLE_HOLD_TICKS):
        room.hold(5)
        assert room.rows == 20
    room.hold(5)
    assert room.rows == 5
    room.hold(30)
    assert room.rows == 30
