"""The live CLI path: ``run_live`` with a stand-in source, in-process (the real `gputop`
command on the fake NVML: ``tests/e2e/test_live_command.py``)."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
import types
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from gputop.cli import live
from gputop.cli import main as cli
from gputop.cli.live import run_live
from gputop.cli.options import Options
from gputop.errors import BadArguments, NoDriver
from gputop.model import ProcessSample, Snapshot
from gputop.pipeline.feed import Feed, LiveFeed
from gputop.pipeline.in_view import InView
from gputop.sinks.fanout import SnapshotSinks
from gputop.sinks.json import snapshot_dict
from gputop.sinks.summary import format_summary
from gputop.sources.base import Source
from gputop.sources.smi.recording import Recording
from support.shortcuts import snapshot_from_path

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "snapshots"
FOUR = SNAPSHOTS / "rtx3090x4-procs-v12.xml"


class StandIn:
    """A Source replaying one capture with a new timestamp and GPU load each tick."""

    def __init__(self, capture: Path = FOUR, *, foreign: bool = False) -> None:
        self.base = snapshot_from_path(capture)
        self.taken: list[Snapshot] = []
        self.closed = 0
        self.foreign = foreign

    def poll(self) -> Snapshot:
        n = len(self.taken)
        assert self.base.timestamp is not None
        gpus = tuple(
            dataclasses.replace(
                gpu,
                utilization=dataclasses.replace(gpu.utilization, gpu=float(n * 10 + gpu.index)),
                processes=tuple(
                    dataclasses.replace(p, foreign=self.foreign) for p in gpu.processes
                ),
            )
            for gpu in self.base.gpus
        )
        snapshot = dataclasses.replace(
            self.base, timestamp=self.base.timestamp + timedelta(seconds=n), gpus=gpus
        )
        self.taken.append(snapshot)
        return snapshot

    def close(self) -> None:
        self.closed += 1


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def run(
    options: Options, source: StandIn, environ: dict[str, str] | None = None
) -> tuple[int, str, str, FakeTime]:
    out, err, fake = io.StringIO(), io.StringIO(), FakeTime()
    code = run_live(
        options,
        open_source=lambda: source,
        environ=environ or {},
        stdout=out,
        stderr=err,
        sleep=fake.sleep,
        clock=fake.clock,
    )
    return code, out.getvalue(), err.getvalue(), fake


def test_once_prints_the_summary_of_one_snapshot_and_closes() -> None:
    source = StandIn()
    code, out, err, _ = run(Options(once=True), source)
    assert code == 0
    assert out == format_summary(source.taken[0]) + "\n"
    assert err == ""
    assert len(source.taken) == 1
    assert source.closed == 1


def test_json_is_the_snapshot() -> None:
    source = StandIn()
    code, out, _, _ = run(Options(json=True), source)
    assert code == 0
    assert json.loads(out) == snapshot_dict(source.taken[0])


def test_count_takes_n_snapshots_on_a_fixed_schedule() -> None:
    source = StandIn()
    code, out, _, fake = run(Options(json=True, count=3, interval=0.5), source)
    lines = out.splitlines()
    assert code == 0
    assert [json.loads(line) for line in lines] == [snapshot_dict(s) for s in source.taken]
    assert len(lines) == 3
    assert fake.sleeps == [0.5, 0.5]


def test_record_keeps_every_gpu_while_the_view_is_the_selection(tmp_path: Path) -> None:
    target = tmp_path / "out.xml"
    source = StandIn()
    code, out, _, _ = run(Options(json=True, count=3, gpu="1,GPU-4354", record=target), source)
    assert code == 0
    shown = [json.loads(line) for line in out.splitlines()]
    assert [[g["index"] for g in doc["gpus"]] for doc in shown] == [[1, 3]] * 3
    with Recording.open(target) as recording:
        assert len(recording) == 3
        replayed = list(recording)
    assert [len(s.gpus) for s in replayed] == [4, 4, 4]
    for back, taken in zip(replayed, source.taken, strict=True):
        assert back.timestamp == taken.timestamp
        assert [g.utilization.gpu for g in back.gpus] == [g.utilization.gpu for g in taken.gpus]
        assert [g.memory for g in back.gpus] == [g.memory for g in taken.gpus]


class IdleBox(StandIn):
    """The capture with its jobs gone: GPU i at (3 - i) % on the first poll, 0 % after."""

    def poll(self) -> Snapshot:
        first = not self.taken
        snapshot = super().poll()
        gpus = tuple(
            dataclasses.replace(
                gpu,
                processes=(),
                utilization=dataclasses.replace(
                    gpu.utilization, gpu=float(3 - gpu.index) if first else 0.0
                ),
            )
            for gpu in snapshot.gpus
        )
        self.taken[-1] = snapshot = dataclasses.replace(snapshot, gpus=gpus)
        return snapshot


def test_pick_prints_a_cuda_visible_devices_list() -> None:
    source = IdleBox()
    code, out, err, fake = run(Options(pick=2), source)
    # Two samples a second apart; the highest utilization counts: 3 (0 %) and 2 (1 %).
    assert (code, out) == (0, "3,2\n")
    assert len(source.taken) == 2 and fake.sleeps == [1.0]
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in err
    code, out, err, _ = run(Options(pick=2), IdleBox(), {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert (code, out, err) == (0, "3,2\n", "")


def test_pick_looks_at_count_samples_an_interval_apart() -> None:
    source = IdleBox()
    code, out, _, fake = run(Options(pick=1, count=4, interval=0.5), source)
    assert (code, out) == (0, "3\n")
    assert len(source.taken) == 4 and fake.sleeps == [0.5, 0.5, 0.5]


def test_pick_chooses_among_the_selected_gpus() -> None:
    code, out, _, _ = run(Options(pick=2, gpu="0,1"), IdleBox())
    assert (code, out) == (0, "1,0\n")


def test_a_malformed_gpu_spec_fails_before_nvml_is_opened() -> None:
    def never() -> StandIn:
        raise AssertionError("NVML opened for a malformed --gpu")

    with pytest.raises(BadArguments):
        run_live(Options(once=True, gpu="zero"), open_source=never)


def test_a_spec_that_matches_nothing_closes_the_source() -> None:
    source = StandIn()
    with pytest.raises(BadArguments, match="GPU-8ad6666a"):
        run(Options(once=True, gpu="9"), source)
    assert source.closed == 1


def test_visible_devices_and_foreign_notes_go_to_stderr_once() -> None:
    source = StandIn(foreign=True)
    code, out, err, _ = run(Options(count=3), source, {"CUDA_VISIBLE_DEVICES": "1", "PATH": "/bin"})
    assert code == 0
    assert out == "".join(format_summary(s) + "\n" for s in source.taken)
    assert len(source.taken) == 3
    assert err.count("CUDA_VISIBLE_DEVICES=1") == 1
    assert err.count("--pid=host") == 1


def test_without_a_headless_flag_the_tui_gets_the_source_and_a_recorder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputop.pipeline.core import Pipeline
    from gputop.pipeline.gpu_select import GpuSelection

    shown: list[Snapshot] = []

    def run_tui(
        options: Options,
        source: Feed | None = None,
        recorder: SnapshotSinks | None = None,
        in_view: InView | None = None,
    ) -> int:
        # What the real run_tui does with a live source, minus the Textual app.
        assert source is not None and options.gpu is not None and in_view is not None
        pipeline = Pipeline(source, selection=GpuSelection.parse(options.gpu), recorder=recorder)
        shown.append(pipeline.start().snapshot)
        shown.append(pipeline.advance().snapshot)
        return 0

    module = types.ModuleType("gputop.cli.tui")
    module.run_tui = run_tui  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gputop.cli.tui", module)
    source = StandIn()
    target = tmp_path / "tui.xml.gz"

    code, out, err, _ = run(Options(gpu="0", record=target), source)

    assert (code, out, err) == (0, "", "")
    assert len(source.taken) == 2  # the --gpu check's snapshot was shown, not thrown away
    assert shown == [dataclasses.replace(taken, gpus=taken.gpus[:1]) for taken in source.taken]
    assert source.closed == 1
    with Recording.open(target) as recording:  # closed by run_live: complete gzip members
        assert list(recording) == source.taken


def test_the_tui_path_opens_the_driver_on_a_thread_while_the_ui_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    module = types.ModuleType("gputop.cli.tui")
    module.run_tui = lambda options, source=None, recorder=None, in_view=None: 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gputop.cli.tui", module)
    monkeypatch.delitem(sys.modules, "gputop.ui.app", raising=False)
    opened_on: list[str] = []
    source = StandIn()

    def open_source() -> StandIn:
        opened_on.append(threading.current_thread().name)
        return source

    code = run_live(Options(), open_source=open_source)

    assert code == 0
    assert opened_on == ["gputop-open"]
    assert "gputop.ui.app" in sys.modules  # imported meanwhile, on this thread
    assert len(source.taken) == 1 and source.closed == 1


def test_a_driver_that_fails_to_open_on_the_thread_fails_in_the_caller() -> None:
    def no_driver() -> Source:
        raise NoDriver("NVIDIA driver not loaded")

    with pytest.raises(NoDriver, match="driver not loaded"):
        run_live(Options(), open_source=no_driver)


def test_a_ui_that_fails_to_import_closes_the_driver_opened_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gputop.ui.app", None)  # import raises ImportError
    source = StandIn()
    with pytest.raises(ImportError):
        run_live(Options(), open_source=lambda: source)
    assert source.closed == 1 and source.taken == []


def test_live_feed_hands_out_the_first_snapshot_and_closes_once() -> None:
    source = StandIn()
    first = source.poll()
    feed = LiveFeed(source, first=first)
    assert feed.start().snapshots == (first,)
    assert feed.advance().snapshots == (source.taken[1],)
    feed.close()
    feed.close()
    assert source.closed == 1


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    source = StandIn()
    # Handed the InView the process table fills (see test_in_view.py).
    monkeypatch.setattr(live, "open_live_source", lambda in_view, gpm_cadence=None: source)
    yield source


def test_cli_main_dispatches_live_options(
    stand_in: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--once"]) == 0
    assert capsys.readouterr().out == format_summary(stand_in.taken[0]) + "\n"


def test_cli_main_turns_errors_into_one_line_and_an_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_driver(in_view: object, gpm_cadence: object = None) -> StandIn:
        raise NoDriver("NVIDIA driver not loaded; --replay works anywhere")

    monkeypatch.setattr(live, "open_live_source", no_driver)
    assert cli.main(["--once"]) == 1
    assert capsys.readouterr().err == "gputop: NVIDIA driver not loaded; --replay works anywhere\n"
    monkeypatch.setattr(live, "open_live_source", lambda in_view, gpm_cadence=None: StandIn())
    assert cli.main(["--json", "--gpu", "GPU-ffff"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing matches 'GPU-ffff'" in err


def test_processes_from_the_stand_in_are_real(stand_in: StandIn) -> None:
    # Guards the tests above: the capture they use has processes and four GPUs.
    first = stand_in.poll()
    assert len(first.gpus) == 4
    assert any(isinstance(p, ProcessSample) for g in first.gpus for p in g.processes)
