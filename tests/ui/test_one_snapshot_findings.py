"""What one snapshot says: memory held at 0% on the panel, "no trend" in the history screen."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from gputop.ui.screens.history import HistoryScreen
from gputop.ui.widgets.gpu_panel import GpuPanel
from support.apps import load, replay_app

A5000 = Path(__file__).resolve().parents[2] / "snapshots" / "rtx-a5000x2-v13.xml"


def panel_text(panel: GpuPanel) -> str:
    return "\n".join(panel.render_line(y).text for y in range(panel.size.height))


async def test_a_one_snapshot_replay_of_memory_held_at_zero_says_so_and_no_trend() -> None:
    """rtx-a5000x2: llama-server holds 21.9GiB at 0%. Not "nothing to report"."""
    app = replay_app([load(A5000)])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        first, second = app.screen.query(GpuPanel)
        assert "held: 1 process holds 21.9GiB at 0% utilization right now" in panel_text(first)
        assert "held: 1 process holds 16.8GiB at 0%" in panel_text(second)
        # The note about the history is for the history screen; a panel has one line.
        assert "no trend" not in panel_text(first)
        first.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        findings = str(app.screen.query_one("#history-findings", Static).render())
        assert "nothing to report" not in findings
        assert "held: 1 process holds 21.9GiB at 0% utilization right now" in findings
        assert "one snapshot: no trend" in findings
