"""A replayed process's details: its PID is the recorded machine's and names nothing here."""

from __future__ import annotations

from pathlib import Path

from gputop.ui.widgets.process_details import RECORDED_ELSEWHERE, ProcessDetails
from support.apps import live_app, load, replay_app

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


async def test_replayed_details_say_the_pid_is_the_recorded_machines() -> None:
    snapshot = load(CAPTURE)
    pids = {p.pid for gpu in snapshot.gpus for p in gpu.processes}
    app = replay_app([snapshot])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetails)
        fields = dict(app.screen.fields)
    assert fields["PID (driver)"].endswith(" (on the recorded machine)")

    assert fields["PID here"] == RECORDED_ELSEWHERE
    assert fields["PID namespace"] == RECORDED_ELSEWHERE
    assert int(fields["PID (driver)"].split()[0]) in pids


async def test_live_details_keep_the_local_pid() -> None:
    app = live_app([load(CAPTURE)])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetails)
        fields = dict(app.screen.fields)
    assert fields["PID (driver)"].isdigit()
    assert fields["PID here"] != RECORDED_ELSEWHERE
