"""An in-memory fleet for UI tests: a test double of ``FleetSource`` over bundled captures.

The real Prometheus path is tested end to end elsewhere; here the nodes are fixed values so
pictures and assertions depend only on the captures in ``snapshots/`` and a fixed clock:

* ``node-a``: four RTX 3090 with processes (gputop's exporter), two busy, two waiting;
* ``node-b``: eight RTX 3090, five idle;
* ``node-c``: an A100 in MIG mode, held by pods (dcgm-exporter's labels), waiting;
* ``node-d``: a Tesla T4 whose exporter stopped answering five minutes ago (stale);
* ``node-e``: two RTX A5000 seen through dcgm-exporter: pods, no processes, both busy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable

from gputop.cli.fleet_tui import fleet_driver
from gputop.model import GpuSample, Snapshot
from gputop.model.fleet import FleetSnapshot, GpuState, GpuWindow, NodeView
from gputop.model.owner import Owner
from gputop.pipeline.fleet_loop import ManualFleetLoop
from gputop.ui.fleet_app import FleetApp
from gputop.ui.screens.node import NodeScreen
from gputop.ui.settings import UiSettings
from gputop.ui.widgets.fleet_table import FleetTable
from support.apps import FIXED_SETTINGS, eight_gpus, load, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
TAKEN = datetime(2024, 9, 18, 21, 44, 12)
"""When the fixed fleet answer was taken."""
SCRAPE = 15.0
FRESH_AGE = 14.0
STALE_AGE = 300.0
POINTS = 40
"""Samples of each node's history (``query_range`` at the scrape interval)."""

B, W, IDLE = GpuState.BUSY, GpuState.WAITING, GpuState.IDLE


def _pods(gpu: GpuSample, pods: Sequence[Owner]) -> GpuSample:
    """``gpu`` held by ``pods`` (the first on the GPU, one on each MIG device)."""
    migs = tuple(
        dataclasses.replace(mig, holders=(pods[(n + 1) % len(pods)],), processes=())
        for n, mig in enumerate(gpu.mig_devices)
    )
    return dataclasses.replace(gpu, holders=(pods[0],), mig_devices=migs, processes=())


def node_stream(base: Snapshot, host: str, newest: datetime) -> list[Snapshot]:
    start = newest - timedelta(seconds=SCRAPE * (POINTS - 1))
    stream = varied_stream(base, POINTS, start=start, step=SCRAPE)
    return [dataclasses.replace(s, host=host) for s in stream]


@dataclasses.dataclass
class NodeSpec:
    host: str
    base: Snapshot
    states: tuple[GpuState, ...]
    exporter: str = "gputop"
    stale: bool = False


def demo_specs() -> list[NodeSpec]:
    rtx = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    a100 = load(CAPTURES / "a100-sxm4-80gb-mig-v12.xml")
    t4 = load(CAPTURES / "tesla-t4-v11.xml")
    a5000 = load(CAPTURES / "rtx-a5000x2-v13.xml")
    research = Owner(pod="train-llm-0", namespace="research", container="trainer")
    notebooks = Owner(pod="jupyter-ana", namespace="notebooks", container="notebook")
    pods = [research, notebooks]
    a100_held = dataclasses.replace(a100, gpus=tuple(_pods(g, pods) for g in a100.gpus))
    a5000_held = dataclasses.replace(
        a5000, gpus=tuple(_pods(g, pods[n % 2 :]) for n, g in enumerate(a5000.gpus))
    )
    return [
        NodeSpec("node-a", rtx, (B, B, W, W)),
        NodeSpec("node-b", eight_gpus(rtx), (IDLE, IDLE, IDLE, B, IDLE, IDLE, B, B)),
        NodeSpec("node-c", a100_held, (W,), exporter="dcgm-exporter"),
        NodeSpec("node-d", t4, (IDLE,), stale=True),
        NodeSpec("node-e", a5000_held, (B, B), exporter="dcgm-exporter"),
    ]


def node_view(spec: NodeSpec, history: Sequence[Snapshot]) -> NodeView:
    snapshot = history[-1]
    windows = tuple(
        GpuWindow(
            index=gpu.index,
            state=state,
            utilization_mean={B: 80.0, W: 0.0, IDLE: 0.0}.get(state),
            memory_used_mean=0 if state is IDLE else gpu.memory.used,
            seconds_waiting=240.0 if state is W else None,
        )
        for gpu, state in zip(snapshot.gpus, spec.states, strict=True)
    )
    return NodeView(
        host=spec.host,
        snapshot=snapshot,
        newest_sample=snapshot.timestamp,
        stale=spec.stale,
        windows=windows,
        exporter=spec.exporter,
        instance=f"{spec.host}:9400",
    )


class MemoryFleet:
    """A ``FleetSource`` whose answers are given: ``answers`` in turn (the last repeats)."""

    def __init__(
        self, answers: Sequence[FleetSnapshot], histories: dict[str, Sequence[Snapshot]]
    ) -> None:
        self.answers = list(answers)
        self.histories = histories
        self.fleet_calls = 0
        self.history_calls: list[tuple[str, float]] = []
        self.closed = False

    def fleet(self) -> FleetSnapshot:
        answer = self.answers[min(self.fleet_calls, len(self.answers) - 1)]
        self.fleet_calls += 1
        return answer

    def node_history(self, host: str, seconds: float) -> Sequence[Snapshot]:
        self.history_calls.append((host, seconds))
        return self.histories.get(host, ())

    def close(self) -> None:
        self.closed = True


def demo_histories(taken: datetime = TAKEN) -> dict[str, list[Snapshot]]:
    """Each node's history, its newest sample ``FRESH_AGE`` (or ``STALE_AGE``) before ``taken``."""
    return {
        spec.host: node_stream(
            spec.base,
            spec.host,
            taken - timedelta(seconds=STALE_AGE if spec.stale else FRESH_AGE),
        )
        for spec in demo_specs()
    }


def demo_fleet(
    taken: datetime = TAKEN,
    histories: dict[str, list[Snapshot]] | None = None,
    error: str | None = None,
) -> FleetSnapshot:
    """The five nodes, as one answer."""
    histories = histories or demo_histories(taken)
    nodes = tuple(node_view(spec, histories[spec.host]) for spec in demo_specs())
    return FleetSnapshot(
        taken_at=taken, nodes=nodes, window_seconds=300.0, scrape_interval=SCRAPE, error=error
    )


def demo_source(*later: FleetSnapshot) -> MemoryFleet:
    """The demo fleet, then ``later`` answers in turn."""
    histories = demo_histories()
    first = demo_fleet(histories=histories)
    return MemoryFleet([first, *later], dict(histories))


def fleet_app(
    source: MemoryFleet, *, settings: UiSettings = FIXED_SETTINGS, refresh: float = 5.0
) -> FleetApp:
    """The fleet app over ``source``, moved by hand (``app.loop.advance()``)."""
    loop = ManualFleetLoop(fleet_driver(source, refresh=refresh))
    labelled = dataclasses.replace(settings, source_label="prometheus:9090")
    return FleetApp(loop, labelled, refresh=refresh, now=lambda: TAKEN)


def screen_text(app: FleetApp) -> str:
    """What the terminal shows, as plain text (the compositor's lines)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def open_node(pilot: Pilot[int], host: str) -> NodeScreen:
    """Enter on ``host``'s row of the fleet: its screen, open."""
    app = pilot.app
    assert isinstance(app, FleetApp)
    hosts = [row.host for row in app.fleet_screen.query_one(FleetTable).rows]
    app.fleet_screen.query_one("#fleet-data", DataTable).move_cursor(row=hosts.index(host))
    await pilot.press("enter")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, NodeScreen) and screen.host == host
    return screen
