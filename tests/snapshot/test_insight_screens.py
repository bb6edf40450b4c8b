"""Pictures of the history screen and of the diagnosis findings (pytest-textual-snapshot).

Deterministic by construction: histories built by formulas (no randomness, no clock), theme
set explicitly, fixed terminal sizes. Baselines live in ``__snapshots__/test_insight_screens/``.
The Pilot tests at the end check the keys (window choice, Esc) without pictures.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta

import pytest
from textual.app import App, ComposeResult
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from fakes.nvml_h200 import loaded_windows
from gputop.history import gpu_key
from gputop.insight.diagnosis import Finding, diagnose
from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    Power,
    ProcessSample,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.pipeline.core import new_history
from gputop.ui.screens.history import HistoryChart, HistoryScreen, findings_content

SnapCompare = Callable[..., bool]

GIB = 1024**3
T0 = datetime(2024, 9, 18, 14, 0, 0)
SIZE = (140, 44)

TRAINER = ProcessSample(
    pid=4242,
    type="C",
    name="python",
    memory_used=30 * GIB,
    command="python train.py --epochs 10",
    cpu_percent=98.0,
)


def plain(markup: object) -> str:
    return Content.from_markup(str(markup)).plain


@pytest.fixture(autouse=True)
def steady(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield


def training_gpu(second: int) -> GpuSample:
    """Ten minutes of a run: busy, thermal throttling for a while, then input-bound."""
    util = 93.0 + (second * 7) % 6 if second < 400 else 12.0 + (second * 5) % 7
    throttled = 250 <= second < 300
    return GpuSample(
        index=0,
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-513536b6",
        utilization=Utilization(gpu=util, memory=util / 2),
        memory=Memory(total=80 * GIB, used=30 * GIB + second * 8 * 2**20),
        power=Power(draw=80.0 + 3.2 * util + 6 * math.sin(second / 9), limit=400.0),
        temperature=Temperature(gpu=86.0 if throttled else 40 + util / 3, slowdown=85.0),
        clocks=Clocks(sm=1005 if throttled else 1410, memory=1593),
        max_clocks=Clocks(sm=1410, memory=1593),
        performance_state="P0",
        throttle_reasons=("sw_thermal_slowdown",) if throttled else (),
        processes=(TRAINER,),
    )


def run(gpu: Callable[[int], GpuSample], seconds: int = 600) -> list[Snapshot]:
    return [Snapshot(timestamp=T0 + timedelta(seconds=s), gpus=(gpu(s),)) for s in range(seconds)]


def busy_gpu(second: int) -> GpuSample:
    return GpuSample(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        utilization=Utilization(gpu=97.0 + second % 3, memory=60.0),
        memory=Memory(total=80 * GIB, used=60 * GIB),
        power=Power(draw=640.0 + (second % 11), limit=700.0),
        temperature=Temperature(gpu=71.0 + (second % 4) / 2),
        clocks=Clocks(sm=1980, memory=2619),
        throttle_reasons=(),
        processes=(TRAINER,),
    )


def h200_gpu(second: int) -> GpuSample:
    """The real H200's one-second windows in turn (``snapshots/h200-gpm.json``): utilization
    reads 94-98 % while its SMs are 93-95 % active and its tensor pipes 90-92 %."""
    windows = loaded_windows()
    window = windows[second % len(windows)]
    return dataclasses.replace(
        busy_gpu(second),
        name="NVIDIA H200",
        utilization=Utilization(gpu=window.utilization, memory=window.memory_utilization),
        activity=window.activity,
        power=Power(draw=window.power, limit=700.0),
    )


def test_history_screen_charts_sm_activity(snap_compare: SnapCompare) -> None:
    """An H200 (GPM): SM activity beside utilization; SM and tensor in the statistics."""
    assert snap_compare(HistoryApp(run(h200_gpu, 120)), press=["1"], terminal_size=SIZE)


class HistoryApp(App[None]):
    """Opens the history screen of GPU 0 over the given snapshots, filed as the pipeline does."""

    def __init__(self, snapshots: Iterable[Snapshot]) -> None:
        super().__init__()
        self.snapshots = list(snapshots)
        self.history = new_history()
        for snapshot in self.snapshots:
            self.history.append(snapshot)

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        key = next((gpu_key(s.gpus[0]) for s in self.snapshots if s.gpus), "GPU-0")
        self.push_screen(HistoryScreen(0, key, self.history.reader, self.snapshots))


class FindingsApp(App[None]):
    """Only the findings list, as the history screen renders it."""

    def __init__(self, snapshots: Sequence[Snapshot]) -> None:
        super().__init__()
        self.findings = diagnose(snapshots, 0)

    def compose(self) -> ComposeResult:
        yield Static(findings_content(self.findings))

    def on_mount(self) -> None:
        self.theme = "textual-dark"


def troubled_gpu(second: int) -> GpuSample:
    """Everything at once: ECC errors appear, heat, power cap, memory full, starved."""
    return GpuSample(
        index=0,
        name="Tesla V100-SXM2-32GB",
        utilization=Utilization(gpu=4.0),
        memory=Memory(total=32 * GIB, used=int(31.5 * GIB)),
        power=Power(draw=298.0, limit=300.0),
        temperature=Temperature(gpu=88.0, slowdown=87.0),
        ecc_errors=EccErrors(volatile_corrected=second // 10, volatile_uncorrected=second // 30),
        throttle_reasons=("sw_power_cap", "hw_thermal_slowdown") if second >= 20 else (),
        processes=(TRAINER,),
    )


def test_history_screen_whole_run(snap_compare: SnapCompare) -> None:
    """All ten minutes: the throttling stretch marked, the waiting finding on top."""
    assert snap_compare(HistoryApp(run(training_gpu)), terminal_size=SIZE)


def test_history_screen_last_minute(snap_compare: SnapCompare) -> None:
    """Key 1: the last minute only, at full resolution."""
    assert snap_compare(HistoryApp(run(training_gpu)), press=["1"], terminal_size=SIZE)


def test_history_screen_busy_gpu(snap_compare: SnapCompare) -> None:
    """A busy, healthy GPU: nothing to report."""
    assert snap_compare(HistoryApp(run(busy_gpu, 120)), terminal_size=SIZE)


def test_findings_rendering(snap_compare: SnapCompare) -> None:
    """Severity marks and colours, worst first."""
    assert snap_compare(FindingsApp(run(troubled_gpu, 60)), terminal_size=(120, 8))


# -- keys (Pilot, no pictures) ------------------------------------------------------------


async def test_window_keys_and_escape() -> None:
    app = HistoryApp(run(training_gpu))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        chart = screen.query_one("#chart-utilization", HistoryChart)
        assert screen.window_key == "4"
        assert plain(chart.border_title) == "Utilization % ━ GPU ━ memory x throttled"
        await pilot.press("1")
        assert screen.window_key == "1"
        # No throttling in the last minute: no mark in the key.
        assert plain(chart.border_title) == "Utilization % ━ GPU ━ memory"
        assert chart.border_subtitle == "min 12 avg 15 max 18"
        title = str(screen.query_one("#history-title", Static).render())
        assert "window 1 min: 1m00s · 61 samples" in title
        await pilot.press("3")
        assert screen.window_key == "3"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HistoryScreen)
        assert isinstance(app.screen, Screen)


async def test_append_updates_findings_and_charts() -> None:
    app = HistoryApp(run(busy_gpu, 60))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert len(screen.findings) == 0
        for second in range(60, 120):
            waiting = dataclasses.replace(training_gpu(500), uuid=busy_gpu(0).uuid)
            snapshot = Snapshot(T0 + timedelta(seconds=second), (waiting,))
            app.history.append(snapshot)  # as the pipeline does, before the tick arrives
            screen.append(snapshot)
        await pilot.pause()
        found: tuple[Finding, ...] = screen.findings  # a new tick, so not the narrowed ()
        assert [finding.kind.value for finding in found] == ["waiting"]
        text = str(screen.query_one("#history-findings", Static).render())
        assert "waiting: 1 process holds 30.0GiB" in text
        title = str(screen.query_one("#history-title", Static).render())
        assert "window all: 1m59s · 120 samples" in title
        chart = screen.query_one("#chart-utilization", HistoryChart)
        assert chart.border_subtitle == "min 13 avg 56 max 99"


async def test_empty_history_says_no_data() -> None:
    app = HistoryApp([])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        text = str(screen.query_one("#history-findings", Static).render())
        assert text == "no data for this GPU yet"
        assert screen.findings == ()


async def test_history_from_a_deque_or_a_generator() -> None:
    for source in (deque(run(training_gpu)), iter(run(training_gpu))):
        app = HistoryApp(source)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, HistoryScreen)
            assert [f.kind.value for f in screen.findings] == ["waiting"]
            title = str(screen.query_one("#history-title", Static).render())
            assert "window all: 9m59s · 600 samples" in title
