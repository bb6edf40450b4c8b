"""`gputop cluster --once`: its table follows the fleet screen's rules (stale nodes counted
apart, memory held on idle and waiting GPUs alike)."""

from __future__ import annotations

import dataclasses

from gputop.sinks.fleet_json import fleet_text
from gputop.ui.render.fleet_rows import COLUMN_INDEX, build_rows
from gputop.ui.render.fleet_summary import summary
from support.fleet import TAKEN, demo_fleet


def test_the_headline_counts_a_stale_node_apart_as_the_screen_does() -> None:
    fleet = demo_fleet()
    head = fleet_text(fleet).splitlines()[0]
    screen = "".join(part for part, _ in summary(fleet))
    # node-d's idle GPU is stale: neither the screen nor --once calls it idle.
    assert "5 of 16 GPUs idle" in screen and "1 node stale" in screen
    assert "3 waiting, 5 idle" in head
    assert "1 node stale" in head


def test_held_idle_is_the_screens_memory_on_idle_and_waiting_gpus() -> None:
    fleet = demo_fleet()
    _, _, *lines = fleet_text(fleet).splitlines()
    held = {line.split()[0]: line.split()[6] for line in lines}
    screen = {row.host: row.cells[COLUMN_INDEX["held"]] for row in build_rows(fleet.nodes, TAKEN)}
    assert held == screen
    assert held["node-a"] != "0MiB"  # node-a's GPUs only wait: their memory is held


def test_one_node_is_not_nodes() -> None:
    fleet = demo_fleet()
    one = dataclasses.replace(fleet, nodes=fleet.nodes[2:3])
    head = fleet_text(one).splitlines()[0]
    assert head.startswith("1 node, 1 GPU: ")
