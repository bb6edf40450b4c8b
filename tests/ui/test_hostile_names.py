"""Names that would drive the terminal (issue 26 §1), on every screen of the TUI: what the
terminal is sent holds no control, 8-bit CSI or bidi override, and markup in a name shows
as written; the model under the view keeps the true strings."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable

from gputop.model import Owner, Snapshot
from gputop.model.fleet import FleetSnapshot
from gputop.ui.fleet_app import FleetApp
from gputop.ui.screens.node import NodeScreen
from gputop.ui.widgets.fleet_table import FleetTable
from gputop.ui.widgets.mig_tree import MigTree
from gputop.ui.widgets.pods_table import PodsTable
from gputop.ui.widgets.process_details import ProcessDetails
from support.apps import live_app, load, open_history, replay_app
from support.fleet import MemoryFleet, demo_fleet, demo_histories, fleet_app
from support.hostile_names import (
    BOLD,
    GPU_NAME,
    HOST,
    HOSTILE_TEXT,
    LINK,
    MARKUP_SHOWN,
    NAMESPACE,
    TITLE,
    hostile,
    obeyed,
)
from support.pods import mig_node

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
SIZE = (200, 50)


def screen_lines(app: App[Any]) -> str:
    """What the terminal is sent for the top screen, line by line."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def assert_safe(app: App[Any], *shown: str) -> str:
    text = screen_lines(app)
    assert obeyed(text) == [], text
    for literal in shown:
        assert literal in text, (literal, text)
    return text


def four_gpus() -> Snapshot:
    return hostile(load(CAPTURES / "rtx3090x4-procs-v12.xml"))


async def test_the_main_screen_its_header_panels_and_process_table() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = assert_safe(app, *MARKUP_SHOWN, f"{BOLD}ns")
        assert "forged line" not in text.split("\n")[0]  # the pod's newline is shown, not obeyed
        assert "\\x0a" in text and "\\x1b]0;pwned\\x07" in text
        # The model the pipeline keeps (and --json writes) is untouched.
        assert app.last_tick is not None
        assert {gpu.name for gpu in app.last_tick.snapshot.gpus} == {
            GPU_NAME.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
        }


async def test_details_history_and_toasts() -> None:
    app = live_app([four_gpus()], readonly=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query_one(DataTable).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetails)
        assert_safe(app, LINK, NAMESPACE[len(BOLD) :])
        await pilot.press("escape")
        await pilot.pause()
        await open_history(pilot)
        assert_safe(app, MARKUP_SHOWN[0])
        await pilot.press("escape")
        await pilot.pause()
        app._failed(RuntimeError(f"driver said {TITLE}{BOLD}no"))
        await pilot.pause()
        assert_safe(app, f"{BOLD}no")


async def test_the_mig_tree_and_a_replay_with_a_hostile_file_name() -> None:
    snapshot = hostile(mig_node())
    app = replay_app([snapshot], source_label=f"run{TITLE}[bold]x.xml", warnings=[HOST])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert_safe(app, "[bold]x.xml")
        await pilot.press("m")
        await pilot.pause()
        assert app.screen.query_one(MigTree).display
        assert_safe(app, MARKUP_SHOWN[0], "P0\\x9b2J")


def hostile_fleet() -> tuple[MemoryFleet, FleetSnapshot]:
    histories = {
        host: [hostile(snapshot) for snapshot in stream]
        for host, stream in demo_histories().items()
    }
    fleet = demo_fleet(histories=histories, error=f"Prometheus said: {TITLE}[bold]bad")
    nodes = tuple(
        dataclasses.replace(
            node,
            host=f"{node.host}{TITLE}{BOLD}\n",
            exporter=f"dcgm{TITLE}",
            instance=f"{node.host}\x9b2J:9400",
        )
        for node in fleet.nodes
    )
    fleet = dataclasses.replace(fleet, nodes=nodes)
    renamed: dict[str, Sequence[Snapshot]] = {
        node.host: histories[node.host.split("\x1b")[0]] for node in nodes
    }
    return MemoryFleet([fleet], renamed), fleet


async def open_node(pilot: Pilot[int], app: FleetApp, prefix: str) -> NodeScreen:
    table = app.fleet_screen.query_one(FleetTable)
    data = app.fleet_screen.query_one("#fleet-data", DataTable)
    data.focus()
    data.move_cursor(row=[row.host.startswith(prefix) for row in table.rows].index(True))
    await pilot.press("enter")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, NodeScreen) and screen.host.startswith(prefix + TITLE)
    app.loop.advance()  # type: ignore[attr-defined]
    await pilot.pause()
    return screen


async def test_the_fleet_table_its_error_line_a_node_and_its_pods() -> None:
    source, _ = hostile_fleet()
    app = fleet_app(source)
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        assert_safe(app, f"{BOLD}\\x0a", "[bold]bad")
        await open_node(pilot, app, "node-b")  # processes
        assert_safe(app, MARKUP_SHOWN[0], NAMESPACE)
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_node(pilot, app, "node-c")  # pods only: the pods table
        assert screen.query_one(PodsTable).rows
        assert_safe(app, NAMESPACE, "web-0\\x0a")


async def test_the_waiting_screen_names_a_hostile_pipe() -> None:
    from gputop.ui.waiting import WaitingApp

    app = WaitingApp(f"waiting for data on a pipe: /tmp/in{TITLE}[bold]x", lambda: False)
    async with app.run_test(size=(100, 20)) as pilot:
        for _ in range(50):  # drawn once the app has mounted
            await pilot.pause(0.05)
            if "/tmp/in" in screen_lines(app):
                break
        assert_safe(app, "/tmp/in\\x1b]0;pwned\\x07[bold]x")


async def _shown(snapshot: Snapshot) -> str:
    app = live_app([snapshot])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        return screen_lines(app)


@settings(max_examples=6, deadline=None)
@given(HOSTILE_TEXT, HOSTILE_TEXT, HOSTILE_TEXT)
def test_any_names_on_the_main_screen(gpu: str, process: str, pod: str) -> None:
    base = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    owner = Owner(runtime="docker", container_id="ab" * 32, pod=pod, namespace="ns")
    gpus = tuple(
        dataclasses.replace(
            one,
            name=f"G{gpu}",
            processes=tuple(
                dataclasses.replace(p, name=process, command=f"P{process}", owner=owner)
                for p in one.processes
            ),
        )
        for one in base.gpus
    )
    text = asyncio.run(_shown(dataclasses.replace(base, gpus=gpus, host=pod)))
    assert obeyed(text) == [], text
    assert LINK in text  # the command column is wide enough to show its end
