"""Health live from NVML: XID and other events on their own thread, memory-repair counters on
the slow cadence, all through the real pynvml over the fake NVML."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pynvml  # noqa: TID251 -- the source under test is handed the real pynvml
import pytest

from fakes.nvml_fake import FakeNvml, Faults
from fakes.nvml_harness import nvml_source
from fakes.nvml_install import apply_cue, follow_cues, installed
from fakes.nvml_scenarios import gpu_sample, snapshot
from gputop.model import Reason, Snapshot
from gputop.model.health import Action, Kind, RemappedRows, RetiredPages, Severity
from gputop.sources.nvml.events import EventWatcher, WatchedGpu, start_watcher
from gputop.sources.nvml.source import NvmlSource
from support.shortcuts import events_status

BOUND = 3.0
"""Seconds an injected event may take to reach a poll (the watcher waits 0.1 s at a time)."""


def _events_until(source: NvmlSource, count: int) -> list[Snapshot]:
    """Poll until ``count`` events arrived in all; the snapshots that carried them."""
    carried: list[Snapshot] = []
    seen = 0
    deadline = time.monotonic() + BOUND
    while seen < count and time.monotonic() < deadline:
        polled = source.poll()
        if polled.events:
            carried.append(polled)
            seen += len(polled.events)
        time.sleep(0.02)
    return carried


def _source(fake: FakeNvml) -> NvmlSource:
    """A source whose watcher runs: it starts at the second poll."""
    pynvml.nvmlInit()
    source = NvmlSource(pynvml, deadline=None, host="testhost", events=True)
    source.poll()
    return source


def test_an_injected_xid_reaches_the_next_poll_with_gpu_code_severity_action() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with installed(fake):
        source = _source(fake)
        try:
            assert source.poll().events == ()
            assert events_status(source) is None
            before = datetime.now()
            fake.inject_xid(1, 79)
            carried = _events_until(source, 1)
            after = datetime.now()
        finally:
            source.close()
    (event,) = [event for snap in carried for event in snap.events]
    assert event.kind is Kind.XID
    assert event.xid == 79
    assert event.gpu == 1
    assert event.uuid == gpu_sample(1).uuid
    assert event.severity is Severity.CRITICAL
    assert event.action is Action.RESTART_BM
    assert "fallen off the bus" in event.description
    assert event.gpu_instance_id is None and event.compute_instance_id is None
    # Stamped when it arrived.
    assert before <= event.time <= after


def test_events_come_once_in_order_and_name_their_mig_instance() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with installed(fake):
        source = _source(fake)
        try:
            source.poll()  # the watcher starts at the second poll
            fake.inject_xid(0, 13, gi=3, ci=0)
            fake.inject_xid(0, 31, gi=5, ci=1)
            fake.inject_event(0, pynvml.nvmlEventTypeDoubleBitEccError)
            carried = _events_until(source, 3)
            later = source.poll()
        finally:
            source.close()
    events = [event for snap in carried for event in snap.events]
    assert [(e.kind, e.xid) for e in events] == [
        (Kind.XID, 13),
        (Kind.XID, 31),
        (Kind.DOUBLE_BIT_ECC, None),
    ]
    assert (events[0].gpu_instance_id, events[0].compute_instance_id) == (3, 0)
    assert (events[1].gpu_instance_id, events[1].compute_instance_id) == (5, 1)
    assert events[0].severity is Severity.WARNING  # 13: the application's, not the GPU's
    assert events[2].severity is Severity.CRITICAL
    assert later.events == ()


def test_each_gpu_is_registered_for_what_it_supports_and_single_bit_events_are_not_asked() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with installed(fake):
        source = _source(fake)
        try:
            source.poll()
            registered = fake.events.registered
        finally:
            source.close()
    for gpu in (0, 1):
        mask = registered[gpu]
        assert mask & pynvml.nvmlEventTypeXidCriticalError
        assert mask & pynvml.nvmlEventTypeDoubleBitEccError
        assert not mask & pynvml.nvmlEventTypeSingleBitEccError  # corrected: no trouble
        assert not mask & pynvml.nvmlEventTypePState


def test_a_gpu_that_supports_only_xids_is_registered_for_xids() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    fake.events.supported = pynvml.nvmlEventTypeXidCriticalError
    with installed(fake):
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        watcher = start_watcher(pynvml, [WatchedGpu(0, handle, None)], wait_ms=50)
        try:
            assert watcher.status is None
            assert watcher.registered == {0: pynvml.nvmlEventTypeXidCriticalError}
        finally:
            watcher.close()


def test_one_poll_starts_no_watcher() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with installed(fake):
        pynvml.nvmlInit()
        source = NvmlSource(pynvml, deadline=None, host="testhost", events=True)
        try:
            source.poll()
            assert fake.counts_since(0)["nvmlEventSetCreate"] == 0
            started = time.monotonic()
        finally:
            source.close()
        assert time.monotonic() - started < 0.3  # nothing to wait for at close


def test_no_event_api_says_why_and_polls_go_on() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)), Faults(missing={"nvmlEventSetCreate"}))
    fake.inject_xid(0, 79)
    with installed(fake):
        source = _source(fake)
        try:
            assert source.poll().gpus[0].name == gpu_sample(0).name
            status = events_status(source)
            assert status is not None and "unavailable" in status
            assert source.poll().events == ()
        finally:
            source.close()


def test_close_stops_the_thread_within_one_wait_and_frees_the_set() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with installed(fake):
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        watcher = EventWatcher(pynvml, [WatchedGpu(0, handle, None)], wait_ms=200)
        assert watcher.start()
        started = time.monotonic()
        watcher.close()
        took = time.monotonic() - started
    assert took < 1.0
    assert not any(t.name == "gputop-nvml-events" and t.is_alive() for t in threading.enumerate())
    assert fake.counts_since(0)["nvmlEventSetFree"] == 1


def test_a_gpu_going_lost_is_one_event() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with nvml_source(fake) as source:
        source.poll()
        fake.lose(1)
        fake.advance()
        first = source.poll()
        second = source.poll()
    assert [(e.kind, e.gpu) for e in first.events] == [(Kind.GPU_LOST, 1)]
    assert first.events[0].severity is Severity.CRITICAL
    assert second.events == ()


def test_memory_repair_counters_are_read() -> None:
    sick = replace(
        gpu_sample(0),
        remapped_rows=RemappedRows(correctable=3, uncorrectable=1, pending=True, failure=False),
        retired_pages=RetiredPages(single_bit=2, double_bit=1, pending=True),
    )
    with nvml_source(FakeNvml(snapshot(sick))) as source:
        got = source.poll().gpus[0]
    assert got.remapped_rows == sick.remapped_rows
    assert got.retired_pages == sick.retired_pages


def test_unsupported_counters_are_none_with_a_reason_and_not_asked_again() -> None:
    # An Ampere+ GPU: no page retirement; an old one: no row remapper.
    old = replace(gpu_sample(0), remapped_rows=RemappedRows(), retired_pages=RetiredPages())
    fake = FakeNvml(snapshot(old))
    with nvml_source(fake) as source:
        source._samplers[0]._slow_refresh = 0.0
        got = source.poll().gpus[0]
        mark = fake.mark()
        again = source.poll().gpus[0]
        counts = fake.counts_since(mark)
    assert got.remapped_rows == RemappedRows()
    assert got.reason("remapped_rows.pending") is Reason.NOT_SUPPORTED
    assert got.reason("retired_pages.double_bit") is Reason.NOT_SUPPORTED
    assert again.reason("remapped_rows.failure") is Reason.NOT_SUPPORTED
    assert counts["nvmlDeviceGetRemappedRows"] == 0
    # The field-values call still runs for memory temperature, not for retired pages.
    assert counts["nvmlDeviceGetFieldValues"] <= 1


def test_counters_set_on_cue_show_on_the_slow_cadence() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with nvml_source(fake) as source:
        source._samplers[0]._slow_refresh = 0.0
        assert source.poll().gpus[0].remapped_rows.pending is False
        apply_cue(fake, "set 0 remapped_rows.pending=1 remapped_rows.uncorrectable=2")
        apply_cue(fake, "set 0 ecc_errors.volatile_uncorrected=4")
        fake.advance()
        got = source.poll().gpus[0]
    assert got.remapped_rows.pending is True
    assert got.remapped_rows.uncorrectable == 2
    assert got.ecc_errors.volatile_uncorrected == 4
    assert got.ecc_errors.volatile_corrected == gpu_sample(0).ecc_errors.volatile_corrected


def test_a_cue_file_delivers_an_xid(tmp_path: Path) -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    cues = tmp_path / "cues"
    cues.write_text("", encoding="utf-8")
    follow_cues(fake, cues, period=0.01)
    with installed(fake):
        source = _source(fake)
        try:
            source.poll()
            with cues.open("a", encoding="utf-8") as out:
                out.write("xid 0 48\n")
            carried = _events_until(source, 1)
        finally:
            source.close()
    assert [e.xid for snap in carried for e in snap.events] == [48]


def test_a_bad_cue_is_refused() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with pytest.raises(ValueError):
        apply_cue(fake, "explode 0")


def test_an_xid_cued_before_the_watcher_listens_waits_for_it() -> None:
    """The fake holds a cued event until a set registers (a test cannot know when)."""
    fake = FakeNvml(snapshot(gpu_sample(0)))
    fake.inject_xid(0, 95)
    with installed(fake):
        source = _source(fake)  # one poll: the watcher starts at the next
        try:
            carried = _events_until(source, 1)
        finally:
            source.close()
    assert [e.xid for snap in carried for e in snap.events] == [95]
