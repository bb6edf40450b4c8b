"""The live CLI path: run_live with a stand-in source, and the real `gputop` on a fake NVML."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
import types
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

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
from support.command import gputop_command
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


# ----- the real `gputop` command on the fake NVML (tests/fakes/sitecustomize.py) -------------

# Fields a live snapshot has that a capture cannot: when, where, and this host's view of PIDs.
LIVE_ONLY = ("timestamp", "host")


def gputop(*args: str, fake: str = str(FOUR), **env: str) -> subprocess.CompletedProcess[str]:
    command, environ = gputop_command(fake, **env)
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=environ, cwd=ROOT, timeout=60
    )


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's JSON without what only a live source knows or how a value went missing."""
    out = {key: value for key, value in document.items() if key not in LIVE_ONLY}
    out["gpus"] = [
        {
            **{key: value for key, value in gpu.items() if key != "unavailable"},
            "processes": [{**p, "foreign": None} for p in gpu["processes"]],
        }
        for gpu in document["gpus"]
    ]
    return out


def test_e2e_once_shows_the_capture(tmp_path: Path) -> None:
    result = gputop("--once")
    assert result.returncode == 0, result.stderr
    expected = format_summary(snapshot_from_path(FOUR)).splitlines()
    lines = result.stdout.splitlines()
    # Same table; only the first line's time differs.
    assert lines[1:] == expected[1:]
    assert lines[0].endswith(expected[0].split("   ", 1)[1])
    # The capture's PIDs exist on no machine here: flagged, with the hint, once.
    assert result.stderr.count("--pid=host") == 1


def test_e2e_json_values_equal_the_captures() -> None:
    result = gputop("--json")
    assert result.returncode == 0, result.stderr
    live_doc = json.loads(result.stdout)
    assert comparable(live_doc) == comparable(snapshot_dict(snapshot_from_path(FOUR)))
    assert all(p["foreign"] for g in live_doc["gpus"] for p in g["processes"])


def test_e2e_count_and_record_give_documents_that_replay(tmp_path: Path) -> None:
    target = tmp_path / "out.xml"
    result = gputop("--count", "3", "--interval", "0.25", "--json", "--record", str(target))
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(printed) == 3
    assert target.read_text().count("<?xml") == 3
    with Recording.open(target) as recording:
        assert len(recording) == 3
        replayed = [snapshot_dict(snapshot) for snapshot in recording]
        assert recording.warnings == []
    capture = comparable(snapshot_dict(snapshot_from_path(FOUR)))
    for shown, back in zip(printed, replayed, strict=True):
        assert comparable(back) == comparable(shown) == capture
        assert back["timestamp"] == shown["timestamp"].split(".")[0]
    # And gputop's own replay reads it.
    again = gputop("--replay", str(target), "--at", "-1", "--json")
    assert again.returncode == 0, again.stderr
    assert comparable(json.loads(again.stdout)) == capture


def test_e2e_pick() -> None:
    # Every GPU of the capture runs two compute jobs: none is free.
    busy = gputop("--pick", "2", "--interval", "0.25")
    assert busy.returncode == 1 and busy.stdout == ""
    assert busy.stderr.startswith("gputop: --pick 2: only 0 of 4 GPU(s) free")
    mig = gputop("--pick", "1", fake="h100-mig-8x7")
    assert mig.returncode == 1
    assert mig.stdout == ""
    assert mig.stderr.startswith("gputop: --pick 1: only 0 of 8 GPU(s) free")
    assert "8 lost or in MIG mode" in mig.stderr


def test_e2e_gpu_selection_and_visible_devices_note() -> None:
    result = gputop("--json", "--gpu", "GPU-0a66,c2:00.0", CUDA_VISIBLE_DEVICES="2")
    assert result.returncode == 0, result.stderr
    assert [g["index"] for g in json.loads(result.stdout)["gpus"]] == [2, 3]
    assert "CUDA_VISIBLE_DEVICES=2: CUDA programs see 2 as cuda:0" in result.stderr


@pytest.mark.parametrize("value", ["2,3", "none"])
def test_e2e_an_inherited_nvidia_visible_devices_note_agrees_with_the_gpus_shown(
    value: str,
) -> None:
    """NVML shows 8 GPUs while the variable asks for 2 or none: the note must not claim
    that this container sees only those (or none) next to a table of 8."""
    result = gputop("--json", fake="h100-mig-8x7", NVIDIA_VISIBLE_DEVICES=value)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["gpus"]) == 8
    note = result.stderr
    assert f"NVIDIA_VISIBLE_DEVICES={value}" in note
    assert "NVML shows 8 GPUs" in note and "not applied" in note
    assert "sees only" not in note and "no GPU here" not in note


def test_e2e_visible_devices_that_name_the_gpus_nvml_shows_say_nothing() -> None:
    """Issue 25: the real H200 printed an NVIDIA_VISIBLE_DEVICES note on every headless run,
    though the one GPU it names is the one NVML shows. A note is for a disagreement."""
    h200 = str(ROOT / "snapshots" / "h200-live" / "h200-train-stream.xml.gz")
    uuid = "GPU-90bf0311-6a59-dc47-3958-189cf6182603"
    for value in ("0", uuid, "all"):
        result = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES=value)
        assert result.returncode == 0, result.stderr
        assert "VISIBLE_DEVICES" not in result.stderr, value
    single = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES="0", CUDA_VISIBLE_DEVICES="0")
    assert "VISIBLE_DEVICES" not in single.stderr
    # Another GPU's UUID, or two GPUs where NVML shows one: said.
    other = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES="GPU-0a66")
    assert "NVIDIA_VISIBLE_DEVICES=GPU-0a66" in other.stderr and "NVML shows 1 GPU" in other.stderr
    two = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES="0,1")
    assert "not applied as asked" in two.stderr


@pytest.mark.parametrize(
    ("spec", "words"),
    [("zero", "expected an index"), ("9", "nothing matches '9'; GPUs here: 0 GPU-8ad6666a")],
)
def test_e2e_a_bad_gpu_spec_is_one_line_and_exit_2(spec: str, words: str) -> None:
    result = gputop("--once", "--gpu", spec)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and words in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "mode", [["--once"], ["--json"], ["--pick", "1"], ["--count", "2"], []], ids=str
)
def test_e2e_no_driver_is_one_line_naming_the_case_and_the_replay_hint(mode: list[str]) -> None:
    from gputop.sources.nvml.source import BUNDLED_CAPTURE_HINT

    result = gputop(*mode, fake="no-driver")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("gputop: NVIDIA driver not loaded")
    assert BUNDLED_CAPTURE_HINT in result.stderr


def test_e2e_an_unwritable_record_path(tmp_path: Path) -> None:
    result = gputop("--once", "--record", str(tmp_path / "missing" / "x.xml"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot write" in result.stderr


def test_e2e_a_mig_uuid_prefix_selects_that_device_live() -> None:
    everything = json.loads(gputop("--json", fake="h100-mig-8x7").stdout)
    gpu = everything["gpus"][3]
    device = gpu["mig_devices"][1]
    prefix = device["uuid"][:12].upper()  # MIG-0301C0DE: abbreviated, other case

    result = gputop("--json", "--gpu", prefix, fake="h100-mig-8x7")

    assert result.returncode == 0, result.stderr
    (chosen,) = json.loads(result.stdout)["gpus"]
    assert chosen["index"] == 3
    assert [d["uuid"] for d in chosen["mig_devices"]] == [device["uuid"]]
    on_device = [p for p in gpu["processes"] if p["gpu_instance_id"] == device["gpu_instance_id"]]
    assert on_device and chosen["processes"] == on_device


def test_e2e_ctrl_c_during_a_slow_driver_start_ends_at_once_with_130() -> None:
    import signal
    import time

    # nvmlInit takes 30 s; stdout is a pipe, so this is the --once summary waiting for it.
    command, environ = gputop_command(GPUTOP_FAKE_NVML_LATENCY="nvmlInitWithFlags=30")
    process = subprocess.Popen(
        command, env=environ, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(2.0)  # well past the imports: waiting for the driver
        assert process.poll() is None
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=10)
        assert time.monotonic() - interrupted < 5
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130
    assert "Traceback" not in err
