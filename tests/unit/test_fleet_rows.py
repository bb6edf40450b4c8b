"""The fleet table's rows and top line as plain values: counts, held memory, age, stale
nodes, sorting and filtering."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from gputop.model.fleet import FleetSnapshot, GpuState, GpuWindow
from gputop.model.units import NA
from gputop.ui.render.fleet_rows import (
    COLUMN_INDEX,
    build_rows,
    held_memory,
    sort_rows,
    visible_rows,
)
from gputop.ui.render.fleet_summary import freshness, summary
from support.fleet import TAKEN, demo_fleet


def text(segments: tuple[tuple[str, str], ...]) -> str:
    return "".join(part for part, _ in segments)


def test_the_top_line_counts_idle_and_waiting_gpus_and_names_where() -> None:
    line = text(summary(demo_fleet()))
    # node-d's idle T4 is stale: it is not idle "right now", and is said apart.
    assert "5 of 16 GPUs idle: node-b (5)" in line
    assert "3 waiting: node-a (2), node-c (1)" in line
    assert "1 node stale" in line


def test_freshness_is_the_oldest_fresh_sample_and_the_scrape_interval() -> None:
    fleet = demo_fleet()
    assert freshness(fleet) == "data 14 s old, scrape 15 s"
    later = dataclasses.replace(fleet, taken_at=TAKEN + timedelta(seconds=100))
    assert freshness(later) == "data 114 s old, scrape 15 s"


def test_many_places_are_cut_to_three_and_a_count() -> None:
    fleet = demo_fleet()
    idle = [GpuWindow(index=0, state=GpuState.IDLE)]
    nodes = tuple(
        dataclasses.replace(fleet.nodes[1], host=f"n{number}", windows=tuple(idle * number))
        for number in range(1, 6)
    )
    line = text(summary(dataclasses.replace(fleet, nodes=nodes)))
    assert "idle: n5 (5), n4 (4), n3 (3), +2 more" in line


def test_no_nodes_and_no_answer_yet_say_so() -> None:
    assert "no GPU nodes" in text(summary(FleetSnapshot(taken_at=TAKEN)))
    assert "asking" in text(summary(None))


def test_a_row_per_node_with_counts_memory_power_and_age() -> None:
    fleet = demo_fleet()
    rows = {row.host: row for row in build_rows(fleet.nodes, TAKEN)}
    a = rows["node-a"]
    assert (a.cell("gpus"), a.cell("busy"), a.cell("waiting"), a.cell("idle")) == (
        "4",
        "2",
        "2",
        "0",
    )
    assert a.cell("age") == "14 s" and not a.stale
    # GPUs 2 and 3 are waiting: the memory they hold is what is held idle, not 0 and not
    # the busy GPUs' too.
    gpus = fleet.nodes[0].snapshot.gpus
    waiting = [gpu.memory.used or 0 for gpu in gpus[2:]]
    assert sum(waiting) > 0
    assert a.sort_values[COLUMN_INDEX["held"]] == float(sum(waiting))
    assert rows["node-e"].cell("held") == "0MiB"  # two busy GPUs: nothing held idle
    d = rows["node-d"]
    assert d.stale and d.cell("age") == "stale 5 min"
    assert d.cell("power") != NA  # its last values are kept, not zeroed


def test_memory_held_is_unknown_when_no_idle_gpu_reports_it() -> None:
    node = demo_fleet().nodes[2]  # node-c: one waiting A100
    blind = dataclasses.replace(
        node,
        windows=(GpuWindow(index=0, state=GpuState.WAITING),),
        snapshot=dataclasses.replace(
            node.snapshot,
            gpus=tuple(
                dataclasses.replace(g, memory=dataclasses.replace(g.memory, used=None))
                for g in node.snapshot.gpus
            ),
        ),
    )
    assert held_memory(blind) is None
    assert build_rows([blind], TAKEN)[0].cell("held") == NA


def test_a_node_without_windows_shows_unknown_counts_not_zero() -> None:
    node = dataclasses.replace(demo_fleet().nodes[0], windows=())
    row = build_rows([node], TAKEN)[0]
    assert (row.cell("busy"), row.cell("waiting"), row.cell("idle")) == (NA, NA, NA)
    assert row.cell("gpus") == "4" and row.cell("unknown") == "4"


def test_gpus_without_a_state_are_counted_as_unknown() -> None:
    fleet = demo_fleet()
    assert "unknown" not in text(summary(fleet))
    a = fleet.nodes[0]
    windows = (*a.windows[:3], dataclasses.replace(a.windows[3], state=GpuState.UNKNOWN))
    nodes = (dataclasses.replace(a, windows=windows), *fleet.nodes[1:])
    changed = dataclasses.replace(fleet, nodes=nodes)
    assert " · 1 unknown" in text(summary(changed))
    row = build_rows(nodes, TAKEN)[0]
    assert (row.cell("waiting"), row.cell("unknown")) == ("1", "1")


def test_a_throttled_gpu_has_its_own_count_not_busys() -> None:
    """Busy means busy (at the power cap too); throttled, a real limit, is counted apart
    rather than folded into busy."""
    a = demo_fleet().nodes[0]
    before = build_rows([a], TAKEN)[0]
    windows = (dataclasses.replace(a.windows[0], state=GpuState.THROTTLED), *a.windows[1:])
    row = build_rows([dataclasses.replace(a, windows=windows)], TAKEN)[0]
    assert row.cell("throttled") == "1" and before.cell("throttled") == "0"
    busy = int(before.cell("busy")) - (a.windows[0].state is GpuState.BUSY)
    assert row.cell("busy") == str(busy)
    assert row.cell("unknown") == before.cell("unknown")


def test_sorting_puts_unknown_last_and_stale_oldest() -> None:
    rows = build_rows(demo_fleet().nodes, TAKEN)
    by_idle = sort_rows(rows, COLUMN_INDEX["idle"], reverse=True)
    assert by_idle[0].host == "node-b"
    by_age = sort_rows(rows, COLUMN_INDEX["age"], reverse=True)
    assert by_age[0].host == "node-d"
    by_host = sort_rows(rows, COLUMN_INDEX["host"], reverse=False)
    assert [row.host for row in by_host] == ["node-a", "node-b", "node-c", "node-d", "node-e"]


def test_the_filter_finds_hosts_exporters_pods_namespaces_and_stale_nodes() -> None:
    rows = build_rows(demo_fleet().nodes, TAKEN)

    def hosts(words: str) -> list[str]:
        return [row.host for row in visible_rows(rows, words)]

    assert hosts("node-b") == ["node-b"]
    assert hosts("DCGM") == ["node-c", "node-e"]
    assert hosts("research") == ["node-c", "node-e"]
    assert hosts("jupyter a100") == ["node-c"]
    assert hosts("stale") == ["node-d"]
    assert hosts("") == [row.host for row in rows]
