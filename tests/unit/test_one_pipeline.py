"""One pipeline for the TUI and every headless mode (issue 12, item 3).

The pipeline takes a feed (live, replay, a recording's documents) and knows no kind of
source; headless runs drive the same ``Pipeline`` by hand (``CountedLoop``); what the ticks
carry (series, diagnosis) is the builder's to say.
"""

from __future__ import annotations

import ast
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

import gputop.pipeline.core as core
from gputop.cli.live import run_live
from gputop.cli.main import main
from gputop.cli.options import Options
from gputop.errors import BadCapture, GputopError
from gputop.model import GpuSample, Snapshot, Utilization
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import DocumentFeed, LiveFeed
from gputop.pipeline.loop import CountedLoop
from gputop.pipeline.tick import Tick

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


def snapshot(number: int, gpus: int = 2) -> Snapshot:
    return Snapshot(
        timestamp=None,
        driver_version="550.90.07",
        gpus=tuple(
            GpuSample(index=i, uuid=f"GPU-{i}", name="G", utilization=Utilization(gpu=number))
            for i in range(gpus)
        ),
    )


class Counting:
    def __init__(self) -> None:
        self.polls = 0

    def poll(self) -> Snapshot:
        self.polls += 1
        return snapshot(self.polls)

    def close(self) -> None:
        pass


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Pipeline]]:
    """Every Pipeline a run builds and starts."""
    pipelines: list[Pipeline] = []
    real = Pipeline.start

    def start(self: Pipeline) -> Tick:
        pipelines.append(self)
        return real(self)

    monkeypatch.setattr(Pipeline, "start", start)
    yield pipelines


def test_the_core_tells_no_kind_of_source_from_another() -> None:
    text = Path(core.__file__).read_text()
    tree = ast.parse(text)
    froms = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported = {node.module for node in froms}
    names = {alias.name for node in froms for alias in node.names}
    assert (
        "gputop.sources.playback.replay" not in imported and "gputop.sources.base" not in imported
    )
    assert "_player" not in text and "_live" not in text
    # Nor is what a view draws its own: the series and the diagnosis are handed to it.
    assert "GPU_UTIL" not in text and "diagnose" not in names


def test_headless_live_runs_through_the_pipeline(started: list[Pipeline]) -> None:
    out = io.StringIO()
    source = Counting()
    code = run_live(
        Options(count=3, json=True, gpu="1"),
        open_source=lambda: source,
        environ={},
        stdout=out,
        stderr=io.StringIO(),
        sleep=lambda seconds: None,
        clock=lambda: 0.0,
    )
    assert code == 0
    (pipeline,) = started
    assert pipeline.arrived == 3 and source.polls == 3
    lines = out.getvalue().splitlines()
    assert [line.count('"uuid": "GPU-') for line in lines] == [1, 1, 1]  # --gpu 1, in it


def test_headless_replay_runs_through_the_pipeline(
    started: list[Pipeline], capsys: pytest.CaptureFixture[str]
) -> None:
    capture = SNAPSHOTS / "rtx3090x4-procs-v12.xml"
    assert main(["--replay", str(capture), "--once", "--gpu", "2"]) == 0
    (pipeline,) = started
    assert pipeline.arrived == 1
    assert "4 GPU(s)" not in capsys.readouterr().out


def test_the_tuis_ticks_carry_the_panels_series_and_a_diagnosis_headless_ones_neither() -> None:
    from gputop.cli.tui import tui_pipeline
    from gputop.ui.render.panel_lines import GAUGE_METRICS, PANEL_VIEW

    assert PANEL_VIEW.metrics is GAUGE_METRICS
    tui = tui_pipeline(LiveFeed(Counting())).start()
    assert {metric for _, metric in tui.history.series_by_key} == set(GAUGE_METRICS)
    assert [index for index, _ in tui.findings] == [0, 1]
    headless = Pipeline(LiveFeed(Counting())).start()
    assert not headless.history.series_by_key and headless.findings == ()


def test_the_counted_loop_keeps_a_fixed_rate_and_stops_at_the_count() -> None:
    now = [0.0]
    sleeps: list[float] = []

    class Slow(Counting):
        def poll(self) -> Snapshot:
            now[0] += 0.4  # each poll takes 0.4 s of the 1 s interval
            return super().poll()

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    seen: list[float] = []
    source = Slow()
    loop = CountedLoop(Pipeline(LiveFeed(source)), count=3, sleep=sleep, clock=lambda: now[0])
    loop.run(lambda tick: seen.append(tick.snapshot.gpus[0].utilization.gpu or 0))
    assert seen == [1, 2, 3] and source.polls == 3
    assert sleeps == pytest.approx([0.6, 0.6])


def test_a_headless_live_feed_raises_a_failed_poll_the_tuis_shows_it() -> None:
    class Failing(Counting):
        def poll(self) -> Snapshot:
            raise GputopError("nvmlDeviceGetCount: Unknown Error")

    with pytest.raises(GputopError, match="Unknown Error"):
        Pipeline(LiveFeed(Failing(), tolerant=False)).start()
    assert Pipeline(LiveFeed(Failing())).start().error == "nvmlDeviceGetCount: Unknown Error"


class Documents:
    def __init__(self, damaged: set[int], length: int = 4) -> None:
        self.warnings: list[str] = []
        self.damaged = damaged
        self.length = length

    def wait_for(self, index: int) -> bool:
        return index < self.length

    def snapshot(self, index: int) -> Snapshot:
        if index in self.damaged:
            raise BadCapture(f"document {index}: malformed")
        return snapshot(index)


def test_documents_are_read_in_order_damaged_ones_skipped_and_said() -> None:
    recording = Documents(damaged={1})
    pipeline = Pipeline(DocumentFeed(recording, range(0, 10), name="r.xml"))
    seen: list[float | None] = []
    CountedLoop(pipeline).run(lambda tick: seen.append(tick.snapshot.gpus[0].utilization.gpu))
    assert seen == [0, 2, 3]  # to the recording's end, not to the range's
    assert recording.warnings == ["r.xml: skipped document 1: malformed"]


def test_a_damaged_document_asked_for_alone_is_an_error() -> None:
    feed = DocumentFeed(Documents(damaged={2}), range(2, 3), name="r.xml", damaged_is_error=2)
    with pytest.raises(BadCapture, match="document 2"):
        CountedLoop(Pipeline(feed)).run(lambda tick: None)
