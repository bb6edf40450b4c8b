"""A GPU's health alarm on its panel (red, until `a` acknowledges it), its events on the
history screen, and the alarm rules of the pipeline."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

from textual.widgets import Static

from gputop.model import Snapshot
from gputop.model.health import RemappedRows, xid_event
from gputop.pipeline.health_alarm import Alarms
from gputop.pipeline.loop import ManualLoop
from gputop.ui.screens.history import HistoryScreen
from gputop.ui.widgets.gpu_grid import GpuGrid
from gputop.ui.widgets.gpu_panel import GpuPanel
from support.apps import live_app, load

FOUR = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"
AT = datetime(2026, 11, 28, 9, 30, 5)


def panel_text(panel: GpuPanel) -> str:
    return "\n".join(panel.render_line(y).text for y in range(panel.size.height))


def _with_xid(base: Snapshot, gpu: int, code: int) -> Snapshot:
    return replace(base, events=(xid_event(AT, gpu, code, uuid=base.gpus[gpu].uuid),))


async def test_an_xid_turns_the_panel_red_until_acknowledged() -> None:
    base = load(FOUR)
    # Polls in turn: healthy, an XID 79 on GPU 1, then healthy again (the event came once).
    app = live_app([base, _with_xid(base, 1, 79), base, base])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        panels = list(app.screen.query(GpuPanel))
        assert "XID" not in panel_text(panels[1])
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        loop.advance()
        await pilot.pause()
        text = panel_text(panels[1])
        assert "XID 79: GPU has fallen off the bus" in text
        assert app.screen.check_action("acknowledge", ()) is True  # offered, in the footer
        assert "XID" not in panel_text(panels[0])
        strip = next(
            panels[1].render_line(y)
            for y in range(panels[1].size.height)
            if "XID 79" in panels[1].render_line(y).text
        )
        segment = next(seg for seg in strip if "XID 79" in seg.text)
        grid = app.screen.query_one(GpuGrid)
        critical = grid.get_component_rich_style("gpu-panel--crit", partial=True)
        assert segment.style is not None and segment.style.color is not None
        assert segment.style.color == critical.color  # the panel's critical red
        red, green, blue = segment.style.color.triplet or (0, 0, 0)
        assert red > 2 * green and red > blue
        # A later poll without the event keeps the alarm: it waits for a person.
        loop.advance()
        await pilot.pause()
        assert "XID 79" in panel_text(panels[1])
        await pilot.press("a")
        await pilot.pause()
        assert "XID 79" not in panel_text(panels[1])
        assert app.screen.check_action("acknowledge", ()) is False
        loop.advance()
        await pilot.pause()
        assert "XID 79" not in panel_text(panels[1])


async def test_the_history_screen_lists_the_gpus_events() -> None:
    base = load(FOUR)
    app = live_app([base, _with_xid(base, 2, 48), _with_xid(base, 0, 13), base])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        loop.advance(3)
        await pilot.pause()
        panels = list(app.screen.query(GpuPanel))
        panels[2].focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        shown = str(app.screen.query_one("#history-findings", Static).render())
        assert "health events (1)" in shown
        assert "2026-11-28 09:30:05 XID 48: double-bit ECC error" in shown
        assert "drain the GPU and reset it" in shown
        assert "XID 13" not in shown  # GPU 0's
        # The events survive the screen: closed and opened again, they are still listed.
        await pilot.press("escape")
        await pilot.pause()
        panels[2].focus()
        await pilot.press("enter")
        await pilot.pause()
        again = str(app.screen.query_one("#history-findings", Static).render())
        assert "XID 48" in again


def test_a_pending_remap_alarms_until_acknowledged_and_again_when_it_comes_back() -> None:
    base = load(FOUR)
    pending = replace(
        base,
        gpus=(
            base.gpus[0],
            replace(base.gpus[1], remapped_rows=RemappedRows(0, 1, True, False)),
            *base.gpus[2:],
        ),
    )
    alarms = Alarms()
    said = alarms.alarms(pending, (), 0)
    assert [index for index, _ in said] == [1]
    assert "row remap pending" in said[0][1]
    alarms.acknowledge(pending, 0)
    assert alarms.alarms(pending, (), 0) == ()
    assert alarms.alarms(base, (), 0) == ()  # the GPU was reset: gone
    assert [index for index, _ in alarms.alarms(pending, (), 0)] == [1]  # back: again


def test_events_alarm_once_each_and_acknowledging_one_gpu_leaves_the_others() -> None:
    base = load(FOUR)
    first = xid_event(AT, 0, 79)
    second = xid_event(AT, 3, 95)
    harmless = xid_event(AT, 2, 13)
    alarms = Alarms()
    said = dict(alarms.alarms(base, (first, second, harmless), 3))
    assert set(said) == {0, 3}
    assert said[3].startswith("XID 95: uncontained uncorrectable ECC error")
    alarms.acknowledge(base, 3, gpu=0)
    assert set(dict(alarms.alarms(base, (first, second, harmless), 3))) == {3}
    again = xid_event(AT, 0, 48)
    said = dict(alarms.alarms(base, (first, second, harmless, again), 4))
    assert set(said) == {0, 3}
    assert "XID 48" in said[0]
