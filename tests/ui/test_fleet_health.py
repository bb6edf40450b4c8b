"""The fleet's health at the keys: the top line counts the nodes with critical XIDs, a node's
screen lists its XIDs and firing alerts; and the health read from a Prometheus answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from textual.screen import Screen
from textual.widgets import Static

from gputop.model.fleet import FleetSnapshot, NodeView
from gputop.model.fleet_health import FiringAlert, FleetHealth, NodeHealth, NodeXid
from gputop.sinks.fleet_json import fleet_text
from gputop.sources.prometheus.client import PrometheusError, Sample
from gputop.sources.prometheus.health import read_health
from gputop.ui.fleet_messages import NodeTickArrived
from support.apps import open_history
from support.fleet import (
    MemoryFleet,
    demo_fleet,
    demo_histories,
    fleet_app,
    open_node,
    screen_text,
)
from support.handed import regions_handed_to

ACTIVE = datetime(2026, 11, 28, 9, 14, 2, tzinfo=timezone.utc)


def _sick_fleet() -> FleetSnapshot:
    health = FleetHealth(
        nodes=(
            NodeHealth(
                "node-a",
                xids=(NodeXid("1", "GPU-x", 79, 2),),
                alerts=(FiringAlert("GpuXidBus", "critical", "1", "Critical XID 79", ACTIVE),),
            ),
            NodeHealth("node-c", xids=(NodeXid("0", None, 48, None),)),
            NodeHealth("node-d", xids=(NodeXid("0", None, 13, 5),)),  # an app's: not critical
        )
    )
    return dataclasses.replace(demo_fleet(), health=health)


async def test_the_top_line_counts_sick_nodes_and_the_node_screen_lists_its_events() -> None:
    histories = demo_histories()
    app = fleet_app(MemoryFleet([_sick_fleet()], dict(histories)))
    async with app.run_test(size=(170, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "2 nodes with critical XIDs" in text
        screen = await open_node(pilot, "node-a")
        shown = str(screen.query_one("#node-health", Static).render())
        assert "GPU 1: XID 79 GPU has fallen off the bus (x2)" in shown
        assert "alert GpuXidBus (critical): Critical XID 79 since 09:14:02" in shown
        assert screen.has_class("-health")
        assert "XID 79 GPU has fallen off the bus" in screen_text(app)


async def test_a_refresh_that_leaves_the_health_as_it_was_lays_nothing_out_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The health line was set at every refresh, and each setting laid the whole node screen
    out again (a Static's update); now only a change of what it says does."""
    healthy = demo_fleet()
    sick = [_sick_fleet()] * 3
    app = fleet_app(MemoryFleet([*sick, healthy], dict(demo_histories())))
    layouts: list[str] = []
    lay_out = Screen._refresh_layout

    def counted(screen: Screen[Any], *args: Any, **kwargs: Any) -> None:
        layouts.append(type(screen).__name__)
        lay_out(screen, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    async with app.run_test(size=(170, 40)) as pilot:
        await pilot.pause()
        screen = await open_node(pilot, "node-a")
        assert screen.has_class("-health")
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()  # the node's own ticks have arrived: its screen is laid out
        layouts.clear()
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        assert layouts == []  # the same XIDs and alerts
        assert "XID 79" in str(screen.query_one("#node-health", Static).render())
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        assert "NodeScreen" in layouts  # the health gone: the line goes
        assert not screen.has_class("-health")
        assert str(screen.query_one("#node-health", Static).render()) == ""


async def test_under_its_history_a_node_screen_shows_new_health_once_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The node screen under its GPU's history draws nothing (Textual would hand the
    history the regions it repaints); what changed meanwhile is drawn as it comes back."""
    healthy = demo_fleet()
    app = fleet_app(MemoryFleet([healthy, healthy, _sick_fleet()], dict(demo_histories())))
    async with app.run_test(size=(170, 40)) as pilot:
        await pilot.pause()
        node = await open_node(pilot, "node-a")
        assert not node.has_class("-health")
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        history = await open_history(pilot)
        handed = regions_handed_to(history, monkeypatch)
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        assert handed == []
        assert not node.has_class("-health")
        # A node tick that repeats the newest snapshot (no new sample) is followed once: the
        # history compares it with the newest tick handed to the node screen, not with the
        # one drawn before the node screen was covered.
        newest = node.newest
        assert newest is not None and newest.snapshot.timestamp is not None
        appended: list[object] = []
        monkeypatch.setattr(history, "append", lambda snapshot, now=None: appended.append(now))
        later = dataclasses.replace(
            newest.snapshot, timestamp=newest.snapshot.timestamp + timedelta(seconds=5)
        )
        fresh = dataclasses.replace(newest, seq=newest.seq + 1, snapshot=later)
        app.post_message(NodeTickArrived("node-a", fresh))
        await pilot.pause()  # one at a time: a newer tick replaces one still queued
        app.post_message(NodeTickArrived("node-a", dataclasses.replace(fresh, seq=fresh.seq + 1)))
        await pilot.pause()
        assert len(appended) == 1
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is node and node.has_class("-health")
        assert "XID 79" in str(node.query_one("#node-health", Static).render())


class _Answers:
    """A Prometheus client that answers from given samples and alerts."""

    def __init__(
        self, queries: Mapping[str, Sequence[Sample]], alerts: list[dict[str, Any]] | None
    ) -> None:
        self.queries = queries
        self.answers = alerts

    def query(self, promql: str) -> list[Sample]:
        return list(self.queries.get(promql, ()))

    def alerts(self) -> list[dict[str, Any]]:
        if self.answers is None:
            raise PrometheusError("http://prometheus:9090: /api/v1/alerts answered 503")
        return self.answers


def _nodes() -> tuple[NodeView, ...]:
    return demo_fleet().nodes


def test_read_health_takes_gputops_counters_over_its_gauge_and_dcgms_last_code() -> None:
    gputop = {"Hostname": "node-a", "gpu": "1", "UUID": "GPU-x", "instance": "node-a:9400"}
    dcgm = {"hostname": "node-c", "gpu": "0", "err_code": "48", "err_msg": "DBE"}
    client = _Answers(
        {
            "gputop_xid_errors_total": [Sample({**gputop, "xid": "79"}, 0.0, 2.0)],
            "DCGM_FI_DEV_XID_ERRORS != 0": [
                Sample({**gputop, "err_code": "79"}, 0.0, 79.0),  # gputop's own: counted
                Sample(dcgm, 0.0, 48.0),
            ],
        },
        [
            {
                "state": "firing",
                "labels": {"alertname": "GpuExporterDown", "instance": "node-a:9400"},
                "annotations": {"summary": "down"},
                "activeAt": "2026-11-28T09:14:02.5Z",
            },
            {"state": "pending", "labels": {"alertname": "GpuLost", "Hostname": "node-a"}},
        ],
    )
    health = read_health(client, _nodes())  # type: ignore[arg-type]
    assert health.error is None
    node_a = health.node("node-a")
    assert node_a.xids == (NodeXid("1", "GPU-x", 79, 2),)
    assert [a.name for a in node_a.alerts] == ["GpuExporterDown"]  # by its instance
    assert node_a.alerts[0].active_at == datetime(2026, 11, 28, 9, 14, 2, 500000, timezone.utc)
    assert health.node("node-c").xids == (NodeXid("0", None, 48, None),)


def test_a_failed_alerts_query_leaves_the_xids_and_says_why() -> None:
    client = _Answers(
        {"gputop_xid_errors_total": [Sample({"Hostname": "node-a", "xid": "79"}, 0.0, 1.0)]},
        None,
    )
    health = read_health(client, _nodes())  # type: ignore[arg-type]
    assert health.node("node-a").xids[0].code == 79
    assert health.error is not None and "503" in health.error


def test_two_machines_of_one_host_name_keep_their_own_xids_and_alerts() -> None:
    """Issue 29: a node is known by its scrape target; health follows the node's key."""
    base = _nodes()[0]
    twins = [
        dataclasses.replace(
            base, host="vm", instance=f"10.0.0.{n}:9400", label=f"vm (10.0.0.{n}:9400)"
        )
        for n in (5, 6)
    ]
    client = _Answers(
        {
            "gputop_xid_errors_total": [
                Sample(
                    {"Hostname": "vm", "instance": "10.0.0.6:9400", "gpu": "0", "xid": "79"},
                    0.0,
                    1.0,
                )
            ],
            "DCGM_FI_DEV_XID_ERRORS != 0": [],
        },
        [
            {
                "state": "firing",
                "labels": {"alertname": "GpuLost", "Hostname": "vm", "instance": "10.0.0.5:9400"},
                "annotations": {},
            }
        ],
    )
    health = read_health(client, twins)  # type: ignore[arg-type]
    first, second = (health.node(node.key) for node in twins)
    assert [x.code for x in second.xids] == [79] and first.xids == ()
    assert [a.name for a in first.alerts] == ["GpuLost"] and second.alerts == ()
    fleet = dataclasses.replace(demo_fleet(), nodes=tuple(twins), health=health)
    text = fleet_text(fleet)
    assert "vm (10.0.0.6:9400): GPU 0: XID 79" in text
    assert "vm (10.0.0.5:9400): alert GpuLost" in text
