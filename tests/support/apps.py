"""Deterministic apps for tests, snapshots and benchmarks: fixed data, no threads, no clock.

Snapshot tests build the app here so every screenshot depends only on the inputs: the
captures in ``snapshots/``, values varied by a formula of the document index (not by chance),
host and wall clock hidden, animations off, and a hand-driven loop instead of the poller.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from textual.pilot import Pilot

from gputop.cli.tui import tui_pipeline
from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Snapshot
from gputop.pipeline.feed import Feed, LiveFeed, ReplayFeed
from gputop.pipeline.loop import ManualLoop
from gputop.sources.playback.replay import ReplayPlayer, Timeline
from gputop.ui.app import GputopApp
from gputop.ui.screens.history import HistoryScreen
from gputop.ui.settings import UiSettings
from gputop.ui.widgets.gpu_panel import GpuPanel

FIXED_SETTINGS = UiSettings(theme="dark", show_host=False, show_clock=False, animate=False)
"""What every snapshot test shows: dark theme, no host, no clock, no animation."""

START = datetime(2024, 9, 18, 21, 34, 12)


class SnapshotTimeline:
    """An in-memory recording over a list of snapshots (the Timeline the player needs)."""

    def __init__(self, snapshots: Sequence[Snapshot], warnings: Sequence[str] = ()) -> None:
        """Play ``snapshots`` in order."""
        self._snapshots = list(snapshots)
        self.warnings = list(warnings)

    def __len__(self) -> int:
        return len(self._snapshots)

    def snapshot(self, index: int) -> Snapshot:
        """The snapshot at ``index``."""
        return self._snapshots[index]

    def timestamp(self, index: int) -> datetime | None:
        """Its timestamp."""
        return self._snapshots[index].timestamp

    def index_at(self, moment: datetime) -> int:
        """The last snapshot at or before ``moment``."""
        best = 0
        for index, snapshot in enumerate(self._snapshots):
            if snapshot.timestamp is not None and snapshot.timestamp <= moment:
                best = index
        return best

    def close(self) -> None:
        """Nothing to release."""


class CyclingSource:
    """A live source that returns the given snapshots in turn, forever."""

    def __init__(self, snapshots: Sequence[Snapshot]) -> None:
        """Cycle through ``snapshots`` (at least one)."""
        self._snapshots = list(snapshots)
        self.polls = 0

    def poll(self) -> Snapshot:
        """The next snapshot."""
        snapshot = self._snapshots[self.polls % len(self._snapshots)]
        self.polls += 1
        return snapshot

    def close(self) -> None:
        """Nothing to release."""


def wave(index: int, gpu: int, period: float = 17.0) -> float:
    """A smooth 0..1 value that differs per GPU: deterministic "load" for varied streams."""
    return 0.5 + 0.5 * math.sin((index + 3 * gpu) * 2 * math.pi / period)


def vary_gpu(gpu: GpuSample, index: int) -> GpuSample:
    """``gpu`` with utilization, memory, power and temperature moved along ``wave``."""
    if gpu.lost:
        return gpu
    load = wave(index, gpu.index)
    util = gpu.utilization
    if util.gpu is not None:
        util = dataclasses.replace(util, gpu=round(100 * load))
    memory = gpu.memory
    if memory.total is not None and memory.used is not None:
        used = int(memory.total * (0.2 + 0.6 * wave(index, gpu.index, 41.0)))
        memory = dataclasses.replace(memory, used=used, free=memory.total - used)
    power = gpu.power
    if power.draw is not None and power.limit is not None:
        power = dataclasses.replace(power, draw=round(power.limit * (0.25 + 0.7 * load), 2))
    temperature = gpu.temperature
    if temperature.gpu is not None:
        temperature = dataclasses.replace(temperature, gpu=float(round(35 + 40 * load)))
    return dataclasses.replace(
        gpu, utilization=util, memory=memory, power=power, temperature=temperature
    )


def varied_stream(
    base: Snapshot, count: int, *, start: datetime = START, step: float = 1.0
) -> list[Snapshot]:
    """``count`` snapshots from ``base``: timestamps ``step`` s apart, values along ``wave``."""
    return [
        dataclasses.replace(
            base,
            timestamp=start + timedelta(seconds=step * index),
            gpus=tuple(vary_gpu(gpu, index) for gpu in base.gpus),
        )
        for index in range(count)
    ]


def eight_gpus(base: Snapshot) -> Snapshot:
    """An 8-GPU box made by repeating ``base``'s GPUs with new indices, UUIDs and bus ids."""
    gpus: list[GpuSample] = []
    for number in range(8):
        gpu = base.gpus[number % len(base.gpus)]
        gpus.append(
            dataclasses.replace(
                gpu,
                index=number,
                uuid=f"GPU-{number:08x}-0000-0000-0000-000000000000",
                pci_bus_id=f"00000000:{0x18 + number * 0x10:02X}:00.0",
                processes=tuple(
                    dataclasses.replace(p, pid=p.pid + number * 100000) for p in gpu.processes
                ),
            )
        )
    return dataclasses.replace(base, gpus=tuple(gpus), attached_gpus=8)


def load(path: Path | str) -> Snapshot:
    """The first snapshot of a capture file."""
    from support.shortcuts import snapshot_from_path

    return snapshot_from_path(Path(path))


def replay_app(
    snapshots: Sequence[Snapshot],
    *,
    position: int | None = None,
    paused: bool = True,
    settings: UiSettings = FIXED_SETTINGS,
    source_label: str = "capture.xml",
    warnings: Sequence[str] = (),
    after_first_frame: Callable[[], None] | None = None,
) -> GputopApp:
    """An app replaying ``snapshots`` from memory, at ``position`` (default: the last)."""
    return timeline_app(
        SnapshotTimeline(snapshots, warnings),
        position=position,
        paused=paused,
        settings=settings,
        source_label=source_label,
        after_first_frame=after_first_frame,
    )


def timeline_app(
    timeline: Timeline,
    *,
    position: int | None = None,
    paused: bool = True,
    settings: UiSettings = FIXED_SETTINGS,
    source_label: str = "capture.xml",
    after_first_frame: Callable[[], None] | None = None,
) -> GputopApp:
    """An app replaying ``timeline`` (e.g. a real ``Recording``) at ``position``."""
    player = ReplayPlayer(timeline, paused=paused)
    player.seek(len(timeline) - 1 if position is None else position)
    loop = ManualLoop(tui_pipeline(ReplayFeed(player)))
    return GputopApp(
        loop,
        dataclasses.replace(settings, source_label=source_label),
        after_first_frame=after_first_frame,
    )


def started_app(feed: Feed) -> GputopApp:
    """The app as ``gputop`` starts it: the first tick is taken before the app."""
    pipeline = tui_pipeline(feed)
    return GputopApp(ManualLoop(pipeline), FIXED_SETTINGS, first_tick=pipeline.start())


def live_app(
    snapshots: Sequence[Snapshot],
    *,
    ticks: int = 1,
    settings: UiSettings = FIXED_SETTINGS,
    readonly: bool = False,
) -> GputopApp:
    """An app "polling" ``snapshots`` in turn, after ``ticks`` polls."""
    loop = ManualLoop(tui_pipeline(LiveFeed(CyclingSource(snapshots))), warmup=ticks - 1)
    return GputopApp(loop, dataclasses.replace(settings, readonly=readonly))


def with_processes(gpu: GpuSample, processes: Sequence[ProcessSample]) -> GpuSample:
    """``gpu`` running exactly ``processes``."""
    return dataclasses.replace(gpu, processes=tuple(processes))


def with_mig(gpu: GpuSample, devices: Sequence[MigDeviceSample]) -> GpuSample:
    """``gpu`` in MIG mode with ``devices``."""
    return dataclasses.replace(gpu, mig_mode=True, mig_devices=tuple(devices))


async def open_history(pilot: Pilot[int]) -> HistoryScreen:
    """Enter on the first GPU panel of the screen on top: its history, open."""
    pilot.app.screen.query(GpuPanel).first().focus()
    await pilot.press("enter")
    await pilot.pause()
    history = pilot.app.screen
    assert isinstance(history, HistoryScreen)
    return history
