"""What a tick costs the UI thread on a small box, where a second's work is a few changed
values in the GPU panels: only the panel a change is in renders, not the grid, containers
and screen behind it (whose pieces of the line a front widget's always win), and the panels'
list of GPUs is worked out once a tick."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from gputop.history import EMPTY_VIEW
from gputop.model import Temperature
from gputop.pipeline.tick import Tick
from gputop.ui.widgets import gpu_grid
from gputop.ui.widgets.gpu_grid import GpuGrid
from gputop.ui.widgets.gpu_panel import GpuPanel
from support.apps import live_app, load
from support.garbage import cyclic_garbage

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"


@pytest.mark.patch("dirty_lines")
async def test_a_changed_value_renders_its_panel_and_nothing_behind_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshot = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    app = live_app([snapshot])
    rendered: list[tuple[Widget, Region]] = []
    render_lines = Widget.render_lines
    panel_lines = GpuPanel.render_lines

    def spy(self: Widget, crop: Region) -> list[Strip]:
        rendered.append((self, crop))
        return render_lines(self, crop)

    def panel_spy(self: GpuPanel, crop: Region) -> list[Strip]:
        rendered.append((self, crop))
        return panel_lines(self, crop)

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        screen.show_tick(Tick(seq=99, snapshot=snapshot, history=EMPTY_VIEW, window=(snapshot,)))
        await pilot.pause()
        panel = screen.query_one(GpuGrid).panels[1]
        before = [strip.text for strip in panel.render_lines(Region(0, 0, *panel.size))]
        monkeypatch.setattr(Widget, "render_lines", spy)
        monkeypatch.setattr(GpuPanel, "render_lines", panel_spy)
        temperature = snapshot.gpus[1].temperature
        assert temperature.gpu is not None
        warmer = Temperature(gpu=temperature.gpu + 7, slowdown=temperature.slowdown)
        gpu1 = dataclasses.replace(snapshot.gpus[1], temperature=warmer)
        hotter = dataclasses.replace(snapshot, gpus=(snapshot.gpus[0], gpu1, *snapshot.gpus[2:]))
        screen.show_tick(Tick(seq=100, snapshot=hotter, window=(hotter,)))
        await pilot.pause()
        monkeypatch.undo()
        after = [strip.text for strip in panel.render_lines(Region(0, 0, *panel.size))]
    # The panel itself drew the line that changed, and nothing else drew anything.
    assert rendered and all(widget is panel for widget, _ in rendered)
    assert {(crop.y, crop.height) for _, crop in rendered} == {(2, 1)}
    assert after != before and f"{warmer.gpu:.0f}C" in "".join(after)


@pytest.mark.patch("dirty_lines")
async def test_ticks_leave_no_line_for_the_collector() -> None:
    # A line drawn in one piece was its own division (Strip.divide) and a panel line that
    # fit was its own crop (Strip.crop_extend), each kept in the strip's cache: a cycle per
    # line repainted, piling up between collections of a 20,000 young generation.
    snapshot = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    app = live_app([snapshot])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        screen.show_tick(Tick(seq=99, snapshot=snapshot, history=EMPTY_VIEW, window=(snapshot,)))
        await pilot.pause()
        panel = screen.query_one(GpuGrid).panels[2]
        with cyclic_garbage() as garbage:
            for seq in range(100, 106):
                warmer = tuple(
                    dataclasses.replace(gpu, temperature=Temperature(gpu=seq - 50, slowdown=None))
                    for gpu in snapshot.gpus
                )
                changed = dataclasses.replace(snapshot, gpus=warmer)
                screen.show_tick(Tick(seq=seq, snapshot=changed, window=(changed,)))
                await pilot.pause()
        drawn = "".join(strip.text for strip in panel.render_lines(Region(0, 0, *panel.size)))
    assert "55C" in drawn
    assert garbage.of_type(Strip) == []


async def test_the_gpus_shown_are_worked_out_once_a_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    app = live_app([snapshot])
    worked_out: list[Tick] = []
    entries = gpu_grid.panel_entries

    def spy(tick: Tick) -> list[gpu_grid.Entry]:
        worked_out.append(tick)
        return entries(tick)

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        monkeypatch.setattr(gpu_grid, "panel_entries", spy)
        tick = Tick(seq=99, snapshot=snapshot, history=EMPTY_VIEW, window=(snapshot,))
        screen.show_tick(tick)
        await pilot.pause()
        panels = screen.query_one(GpuGrid).panels
    assert worked_out == [tick]
    assert [panel.gpu for panel in panels] == list(snapshot.gpus)
    assert all(isinstance(panel, GpuPanel) for panel in panels)


async def test_a_tick_makes_no_dom_query_on_the_main_screen() -> None:
    snapshot = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    app = live_app([snapshot])
    queried: list[object] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        screen.show_tick(Tick(seq=99, snapshot=snapshot, history=EMPTY_VIEW, window=(snapshot,)))
        await pilot.pause()
        query_one = screen.query_one

        def spy(*args: object, **kwargs: object) -> object:
            queried.append(args)
            return query_one(*args, **kwargs)  # type: ignore[call-overload]

        screen.query_one = spy  # type: ignore[method-assign, assignment]
        gpu0 = dataclasses.replace(snapshot.gpus[0], fan_speed=12.0)
        changed = dataclasses.replace(snapshot, gpus=(gpu0, *snapshot.gpus[1:]))
        screen.show_tick(Tick(seq=100, snapshot=changed, window=(changed,)))
        await pilot.pause()
        del screen.query_one
        shown = screen.query_one(GpuGrid).panels[0].gpu
    # The header, the grid and the process table were found when first shown, not again.
    assert queried == []
    assert shown is gpu0


def textual_lines(panel: GpuPanel) -> list[Strip]:
    """The panel as Textual's own rendering draws it, whole, from nothing cached."""
    panel.refresh()
    outer = panel.outer_size
    return Widget.render_lines(panel, Region(0, 0, outer.width, outer.height))


async def test_panel_lines_framed_by_the_panel_are_the_lines_textual_draws() -> None:
    snapshot = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    app = live_app([snapshot])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        grid = screen.query_one(GpuGrid)
        seq = 100
        for step in range(6):
            gpus = list(snapshot.gpus)
            temperature = gpus[step % 4].temperature
            assert temperature.gpu is not None
            warmer = Temperature(gpu=temperature.gpu + step + 1, slowdown=temperature.slowdown)
            gpus[step % 4] = dataclasses.replace(
                gpus[step % 4], temperature=warmer, stale=step == 3
            )
            changed = dataclasses.replace(snapshot, gpus=tuple(gpus))
            seq += 1
            screen.show_tick(Tick(seq=seq, snapshot=changed, window=(changed,)))
            if step == 2:
                grid.panels[1].focus()  # a tinted panel: Textual draws all of it
            if step == 4:
                app.theme = "textual-light"
            await pilot.pause()
            for panel in grid.panels:
                outer = panel.outer_size
                rows = range(1, outer.height - 1)
                framed = [panel.render_lines(Region(0, row, outer.width, 1))[0] for row in rows]
                assert framed == textual_lines(panel)[1:-1], (step, panel.key)
        framing = [panel for panel in grid.panels if panel._frame is not None]
    # Unfocused panels frame their own lines (the focused, tinted one is left to Textual).
    assert len(framing) >= 3
