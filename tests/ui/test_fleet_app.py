"""The fleet app at the keys: the table's rows, sort and filter keys, Enter into a node and Esc
back, stale nodes and failed refreshes, pods in place of processes, and the help."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from gputop.model import Snapshot
from gputop.model.fleet import GpuState
from gputop.ui.fleet_app import FleetApp
from gputop.ui.screens.fleet import FleetScreen
from gputop.ui.screens.help import HelpScreen
from gputop.ui.screens.node import NodeScreen
from gputop.ui.widgets.fleet_table import FleetTable
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.pods_table import PodsTable
from gputop.ui.widgets.process_table import ProcessTable
from support.fleet import (
    MemoryFleet,
    demo_fleet,
    demo_histories,
    demo_source,
    fleet_app,
    open_node,
    screen_text,
)
from support.handed import regions_handed_to


def table(app: FleetApp) -> FleetTable:
    return app.fleet_screen.query_one(FleetTable)


def hosts(app: FleetApp) -> list[str]:
    return [row.host for row in table(app).rows]


async def test_every_node_is_a_row_most_idle_first_and_the_top_line_answers() -> None:
    app = fleet_app(demo_source())
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        assert hosts(app)[0] == "node-b"
        assert sorted(hosts(app)) == ["node-a", "node-b", "node-c", "node-d", "node-e"]
        text = screen_text(app)
        assert "5 of 16 GPUs idle: node-b (5)" in text
        assert "3 waiting: node-a (2), node-c (1)" in text
        assert "1 node stale" in text and "stale 5 min" in text
        assert "data 14 s old, scrape 15 s" in text


async def test_sort_keys_and_the_filter_work_as_in_the_process_table() -> None:
    app = fleet_app(demo_source())
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        fleet = table(app)
        await pilot.press("less_than_sign")  # IDLE -> WAIT
        assert fleet.columns[fleet.sort_column] == "waiting"
        assert hosts(app)[0] == "node-a"
        await pilot.press("r")
        assert hosts(app)[-1] == "node-a"
        await pilot.press("slash", *"dcgm", "enter")
        await pilot.pause()
        assert sorted(hosts(app)) == ["node-c", "node-e"]
        assert "2 of 5 nodes" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert len(hosts(app)) == 5
        assert isinstance(app.screen, FleetScreen)


async def test_the_cursor_stays_on_its_node_across_a_refresh_that_reorders() -> None:
    first = demo_fleet()
    # node-b's GPUs all got work and node-c's waiting A100 went idle: node-c sorts first.
    a, b, c, d, e = first.nodes
    busy = tuple(dataclasses.replace(w, state=GpuState.BUSY) for w in b.windows)
    idle = tuple(dataclasses.replace(w, state=GpuState.IDLE) for w in c.windows)
    later = dataclasses.replace(
        first,
        nodes=(a, dataclasses.replace(b, windows=busy), dataclasses.replace(c, windows=idle), d, e),
    )
    app = fleet_app(MemoryFleet([first, later], {}))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        assert hosts(app)[0] == "node-b"
        data = app.fleet_screen.query_one("#fleet-data", DataTable)
        data.move_cursor(row=0)
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        assert hosts(app)[0] == "node-c"
        assert hosts(app).index("node-b") == 3
        assert table(app).highlighted_host == "node-b"


async def test_the_fleet_under_a_node_waits_for_it_to_close_instead_of_repainting_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual hands what a covered screen repaints to the screen on top: each refresh of
    the fleet's rows under a node's screen redrew that whole screen (18 KB a refresh on a
    120x40 terminal, benchmarks/README). The fleet now draws its answer once it is back."""
    first = demo_fleet()
    a, b, c, d, e = first.nodes
    busy = tuple(dataclasses.replace(w, state=GpuState.BUSY) for w in b.windows)
    idle = tuple(dataclasses.replace(w, state=GpuState.IDLE) for w in c.windows)
    nodes = (a, dataclasses.replace(b, windows=busy), dataclasses.replace(c, windows=idle), d, e)
    later = dataclasses.replace(first, nodes=nodes)
    app = fleet_app(MemoryFleet([first, first, later], dict(demo_histories())))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = await open_node(pilot, "node-a")
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()  # the node's own ticks: its screen laid out and drawn
        handed = regions_handed_to(screen, monkeypatch)
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        assert app.fleet is later
        assert handed == []
        assert hosts(app)[0] == "node-b"  # not drawn while covered
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        assert hosts(app)[0] == "node-c"  # the answer that came meanwhile


async def test_enter_opens_the_node_with_the_single_box_panels_and_escape_goes_back() -> None:
    source = demo_source()
    app = fleet_app(source)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        screen = await open_node(pilot, "node-a")
        panels = screen.query(GpuPanel)
        assert len(panels) == 4
        assert source.history_calls[0][0] == "node-a"
        assert screen.query_one(ProcessTable).rows  # gputop's exporter names processes
        # The header names the node (whatever the settings say of the local host).
        assert screen_text(app).splitlines()[0].startswith(" gputop  node-a  driver 550.90.07")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        # A refresh after closing feeds no node screen.
        before = app.node_ticks
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        assert app.node_ticks == before


async def test_a_stale_node_is_drawn_stale_not_zero() -> None:
    app = fleet_app(demo_source())
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        screen = await open_node(pilot, "node-d")
        panel = screen.query_one(GpuPanel)
        assert panel.has_class("-stale")
        assert panel.border_subtitle == " STALE "
        tick = screen.tick
        assert tick is not None and tick.snapshot.gpus[0].power.draw
        assert "stale: newest sample 5 min old" in screen_text(app)


async def test_a_failed_refresh_says_why_and_keeps_the_last_good_rows() -> None:
    failed = dataclasses.replace(
        demo_fleet(), error="Prometheus at http://prometheus:9090 did not answer in 5 s"
    )
    app = fleet_app(demo_source(failed))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        assert "did not answer" not in screen_text(app)
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        text = screen_text(app)
        assert "⚠ Prometheus at http://prometheus:9090 did not answer in 5 s" in text
        assert "showing the answer of 21:44:12" in text
        assert len(hosts(app)) == 5
        assert app.fleet_screen.has_class("-error")


async def test_pods_stand_in_for_processes_where_the_labels_name_them() -> None:
    app = fleet_app(demo_source())
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        screen = await open_node(pilot, "node-c")
        assert screen.has_class("-pods-only")
        pods = screen.query_one(PodsTable)
        assert ("0", "research", "train-llm-0", "trainer") in pods.rows
        assert ("0 1g.20gb GI 3", "notebooks", "jupyter-ana", "notebook") in pods.rows
        assert not screen.query_one(ProcessTable).display
        assert app.focused is not None and app.focused.id == "pods-data"
        # No filter typed into the hidden process table.
        await pilot.press("slash")
        assert app.focused is not None and app.focused.id == "pods-data"
        await pilot.press("tab", "tab")
        assert app.focused is not None and app.focused.id == "pods-data"
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_node(pilot, "node-a")
        assert not screen.has_class("-pods")


async def test_space_pauses_the_node_and_the_interval_keys_are_off() -> None:
    app = fleet_app(demo_source())
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        screen = await open_node(pilot, "node-b")
        await pilot.press("space")
        await pilot.pause()
        assert screen.tick is not None and screen.tick.paused
        assert screen.check_action("interval", (1,)) is False


async def test_help_lists_the_fleet_keys() -> None:
    app = fleet_app(demo_source())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        titles = [title for title, _ in help_screen.sections]
        assert titles[:3] == ["General", "Fleet", "Node"]
        fleet_rows = dict(help_screen.sections[1][1])
        assert {"Enter", "/", "<", ">", "r"} <= set(fleet_rows)
        node_rows = dict(help_screen.sections[2][1])
        assert node_rows["Esc"] == "Fleet"
        assert "gputop cluster keys" in screen_text(app)
        # A node screen signals nothing and the fleet sets its pace: no such keys listed.
        listed = " ".join(text for _, rows in help_screen.sections for _, text in rows)
        for absent in ("TERM", "KILL", "INT", "interval"):
            assert absent not in listed.split(), absent


async def test_a_node_turning_stale_widens_its_column_to_say_so() -> None:
    stale = demo_fleet()
    fresh = dataclasses.replace(
        stale, nodes=tuple(dataclasses.replace(node, stale=False) for node in stale.nodes)
    )
    app = fleet_app(MemoryFleet([fresh, stale], {}))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        assert "stale" not in screen_text(app)
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        line = next(line for line in screen_text(app).splitlines() if "node-d" in line)
        assert "stale 5 min" in line


async def test_a_node_screen_says_what_it_waits_for_until_its_history_arrives() -> None:
    app = fleet_app(demo_source())
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        # Pushed without asking the loop: the history is still on its way.
        app.push_screen(NodeScreen(app.settings, "node-b", 5.0))
        await pilot.pause()
        assert "node-b  reading node-b's recent samples…" in screen_text(app)
        app.loop.open_node("node-b")
        await pilot.pause()
        assert "reading" not in screen_text(app)
        assert len(app.screen.query(GpuPanel)) == 8


async def test_columns_fit_their_cells_as_values_change_without_relaying_rows() -> None:
    stale = demo_fleet()
    back = dataclasses.replace(
        stale,
        nodes=tuple(
            dataclasses.replace(node, stale=False, newest_sample=stale.taken_at)
            for node in stale.nodes
        ),
    )
    app = fleet_app(MemoryFleet([stale, back], {}))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        data = app.fleet_screen.query_one("#fleet-data", DataTable)
        age = data.columns[ColumnKey("age")]
        assert age.content_width == len("stale 5 min")
        order = hosts(app)
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        assert hosts(app) == order  # same order: cells updated in place
        # Every node answers again: the column shrinks back to "0 s" (its label is wider).
        assert age.content_width == len("AGE ")
        assert [row.cell("age") for row in table(app).rows] == ["0 s"] * 5
        assert "stale" not in screen_text(app)


async def test_same_named_nodes_are_two_rows_and_the_clash_is_said_once() -> None:
    histories = demo_histories()
    first = demo_fleet(histories=histories)
    a, b = first.nodes[0], first.nodes[1]
    # Two exporters that both call themselves "vm": two rows named by instance.
    twins = (
        dataclasses.replace(a, host="vm", instance="10.0.0.5:9400", label="vm (10.0.0.5:9400)"),
        dataclasses.replace(b, host="vm", instance="10.0.0.6:9400", label="vm (10.0.0.6:9400)"),
    )
    notice = "2 exporters report the host name 'vm' (10.0.0.5:9400; 10.0.0.6:9400)"
    answer = dataclasses.replace(first, nodes=twins, notices=(notice,))
    later = dataclasses.replace(answer, notices=())
    by_key: dict[str, Sequence[Snapshot]] = {
        "vm (10.0.0.5:9400)": histories[a.host],
        "vm (10.0.0.6:9400)": histories[b.host],
    }
    app = fleet_app(MemoryFleet([answer, later], by_key))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        assert sorted(hosts(app)) == ["vm (10.0.0.5:9400)", "vm (10.0.0.6:9400)"]
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        toasts = [n.message for n in app._notifications]  # the app's own list of toasts
        assert toasts.count(notice) == 1
        screen = await open_node(pilot, "vm (10.0.0.6:9400)")
        assert screen.host == "vm (10.0.0.6:9400)"
