"""Which processes a view shows (``InView``): those have their ``/proc`` facts read every
tick, the others every ``HIDDEN_REFRESH`` seconds, so a tick costs what is on screen."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gputop.cli import live
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.in_view import InView
from gputop.sources.host.procinfo import (
    HIDDEN_IDENTITY_REFRESH,
    HIDDEN_REFRESH,
    IDENTITY_REFRESH,
    ProcessEnricher,
)
from support.apps import CyclingSource
from unit.test_procinfo import Clock, Factory, FakeProcess, make_proc

PIDS = list(range(100, 120))


class Counting(FakeProcess):
    """A process whose identity reads are counted too."""

    identity_calls: int = 0

    def cmdline(self) -> list[str]:
        self.identity_calls += 1
        return super().cmdline()


def _enricher(proc_root: Path, in_view: InView) -> tuple[ProcessEnricher, Factory, Clock]:
    for pid in PIDS:
        make_proc(proc_root, pid, (pid,))
    factory = Factory(**{str(pid): Counting(pid) for pid in PIDS})
    clock = Clock()
    enricher = ProcessEnricher(
        proc_root=proc_root, process_factory=factory, clock=clock, in_view=in_view.pids
    )
    return enricher, factory, clock


@pytest.fixture
def proc_root(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    root.mkdir()
    return root


def _reads(factory: Factory) -> dict[int, int]:
    return {pid: process.cpu_calls for pid, process in factory.processes.items()}


def test_processes_on_screen_are_read_every_tick_the_others_now_and_then(
    proc_root: Path,
) -> None:
    in_view = InView()
    enricher, factory, clock = _enricher(proc_root, in_view)
    enricher.host_fields(PIDS)  # before the view says anything: every process
    in_view.show({100, 101})
    clock.now += 1.0
    second = enricher.host_fields(PIDS)  # the first CPU % of every process
    assert all(second[pid].cpu_percent == 87.5 for pid in PIDS)
    before = _reads(factory)

    ticks = int(HIDDEN_REFRESH)
    for _ in range(ticks):
        clock.now += 1.0
        facts = enricher.host_fields(PIDS)

    reads = {pid: count - before[pid] for pid, count in _reads(factory).items()}
    assert reads[100] == reads[101] == ticks
    hidden = [reads[pid] for pid in PIDS[2:]]
    # Each of the others once in the period, at a point its PID picks: not all at once.
    assert hidden == [1] * len(hidden)
    # What is handed out between reads is the last reading, never a blank.
    assert all(facts[pid].user == "alice" and facts[pid].cpu_percent for pid in PIDS)


def test_a_process_scrolled_into_view_is_read_on_the_next_tick(proc_root: Path) -> None:
    in_view = InView()
    enricher, factory, clock = _enricher(proc_root, in_view)
    in_view.show(set())
    enricher.host_fields(PIDS)
    clock.now += 1.0
    enricher.host_fields(PIDS)
    clock.now += 1.0
    enricher.host_fields(PIDS)
    before = factory.processes[119].cpu_calls

    in_view.show({119})
    clock.now += 1.0
    enricher.host_fields(PIDS)

    assert factory.processes[119].cpu_calls == before + 1


def test_no_view_means_every_process_every_tick(proc_root: Path) -> None:
    in_view = InView()
    enricher, factory, clock = _enricher(proc_root, in_view)
    in_view.show({100})
    in_view.show(None)  # the MIG tree lists every process

    for _ in range(3):
        enricher.host_fields(PIDS)
        clock.now += 1.0

    assert set(_reads(factory).values()) == {3}


def test_the_command_line_of_a_process_off_screen_is_read_less_often(proc_root: Path) -> None:
    in_view = InView()
    enricher, factory, clock = _enricher(proc_root, in_view)
    in_view.show({100})
    seconds = int(HIDDEN_IDENTITY_REFRESH)
    for _ in range(seconds):
        enricher.host_fields(PIDS)
        clock.now += 1.0

    seen = factory.processes[100]
    unseen = factory.processes[110]
    assert isinstance(seen, Counting) and isinstance(unseen, Counting)
    assert seen.identity_calls == seconds // IDENTITY_REFRESH
    assert unseen.identity_calls == 1


def test_a_pipeline_hands_its_in_view_to_every_tick() -> None:
    in_view = InView()
    pipeline = Pipeline(LiveFeed(CyclingSource([_empty()])), in_view=in_view)

    assert pipeline.start().in_view is in_view
    assert pipeline.advance().in_view is in_view
    assert Pipeline(LiveFeed(CyclingSource([_empty()]))).start().in_view is None


def test_the_live_source_reads_what_the_view_says(monkeypatch: pytest.MonkeyPatch) -> None:
    made: dict[str, Any] = {}

    def enricher(**kwargs: Any) -> str:
        made.update(kwargs)
        return "enricher"

    def open_nvml_source(
        *,
        enrich: object,
        seldom: frozenset[str],
        shown: Callable[[], frozenset[int] | None],
        mig_shown: Callable[[], bool],
        gpm_cadence: object = None,
    ) -> CyclingSource:
        made["enrich"] = enrich
        made["seldom"] = seldom
        made["shown"] = shown
        made["mig_shown"] = mig_shown
        return CyclingSource([_empty()])

    monkeypatch.setattr(live, "ProcessEnricher", enricher)
    monkeypatch.setattr("gputop.sources.nvml.source.open_nvml_source", open_nvml_source)
    in_view = InView(unshown=frozenset({"power.energy"}))

    live.open_live_source(in_view)
    in_view.show({5, 6})

    assert made["enrich"] == "enricher"
    assert made["seldom"] == frozenset({"power.energy"})
    assert made["in_view"]() == frozenset({5, 6})
    # The NVML source is told too: per-process utilization only for the GPUs on screen.
    assert made["shown"]() == frozenset({5, 6})
    # and whether MIG activity is shown (GPM, 1-2 ms an instance): until told, it may be.
    assert made["mig_shown"]() is True
    in_view.show_mig_activity(False)
    assert made["mig_shown"]() is False


def _empty() -> Any:
    from gputop.model import Snapshot

    return Snapshot(timestamp=None)


def test_a_known_process_costs_no_directory_look_up_and_is_foreign_once_gone(
    proc_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str] = []
    isdir = os.path.isdir

    def counted(path: str) -> bool:
        looked.append(path)
        return isdir(path)

    monkeypatch.setattr(os.path, "isdir", counted)  # what procinfo places new PIDs with
    in_view = InView()
    enricher, factory, clock = _enricher(proc_root, in_view)
    for _ in range(3):
        enricher.host_fields([100])
        clock.now += 1.0
    assert len(looked) == 1  # placed once; then its stat line says it is still there

    factory.processes[100].running = False  # the process exits
    factory.gone.add(100)
    shutil.rmtree(proc_root / "100")
    facts = enricher.host_fields([100])

    assert facts[100].foreign


def test_fields_nothing_shows_are_named_only_when_the_tui_is_all_the_run_has(
    tmp_path: Path,
) -> None:
    from gputop.cli.options import Options

    tui = live.TUI_UNSHOWN
    sm, mig = "processes.sm_utilization", "mig_devices.utilization"
    assert live.unshown_fields(Options()) == tui
    assert live.unshown_fields(Options(log=tmp_path / "log.csv")) == tui
    # A recording writes the clocks; the TUI shows per-process and MIG activity.
    assert live.unshown_fields(Options(record=tmp_path / "run.xml")) == {"power.energy"}
    # Headless: a summary, --log and --pick write none of the priced fields, --record the
    # clocks, --json the clocks and per-process utilization (neither writes MIG activity
    # or the energy counter).
    headless = live.PRICED
    assert live.unshown_fields(Options(once=True)) == headless
    assert live.unshown_fields(Options(count=5, log=tmp_path / "l.csv")) == headless
    assert live.unshown_fields(Options(pick=1)) == headless
    assert live.unshown_fields(Options(json=True)) == {"power.energy", mig}
    assert live.unshown_fields(Options(count=5, record=tmp_path / "r.xml")) == {
        "power.energy",
        sm,
        mig,
    }
    # `gputop export` writes every priced series; per-process ones only with process series.
    assert live.export_unshown(process_series=True) == frozenset()
    assert live.export_unshown(process_series=False) == {sm}
