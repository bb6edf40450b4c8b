"""Health where a person or a program looks: the recordings' counters, `--json`, `--once`,
the exporter's series, the history's event log and `--gpu`."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from fakes.nvml_scenarios import gpu_sample, snapshot
from gputop.history import HistoryStore
from gputop.history.events import EventHistory
from gputop.insight.health_log import HealthLog
from gputop.model import EccErrors, Reason, Snapshot
from gputop.model.gpu_health import gpu_problems
from gputop.model.health import (
    XIDS,
    Action,
    Kind,
    RemappedRows,
    RetiredPages,
    Severity,
    kind_event,
    xid_event,
    xid_info,
)
from gputop.pipeline.gpu_select import GpuSelection
from gputop.sinks.json import snapshot_dict
from gputop.sinks.prometheus.latest import LatestSample
from gputop.sinks.prometheus.tracker import ExportTracker
from gputop.sinks.smi_xml import snapshot_to_xml
from gputop.sinks.summary import format_summary
from gputop.sources.smi.xml import parse_document
from support.command import gputop
from support.metrics import document, find, series

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
T0 = datetime(2026, 11, 28, 9, 0, 0)


def _first(name: str) -> Snapshot:
    return document(SNAPSHOTS / name)


# --- the XID table ------------------------------------------------------------------------


def test_the_table_rates_the_codes_the_issue_names() -> None:
    assert xid_info(79).severity is Severity.CRITICAL
    assert xid_info(79).action is Action.RESTART_BM
    for code in (48, 64, 74, 95, 119, 120):
        assert xid_info(code).severity is Severity.CRITICAL, code
    # NVIDIA's catalogue: 63 is IGNORE (a remap recorded; the pending remap is the
    # remapped-rows counter's warning), 43 too (the channel was reset, the GPU is fine).
    assert (xid_info(63).severity, xid_info(63).action) == (Severity.WARNING, Action.NONE)
    assert (xid_info(43).severity, xid_info(43).action) == (Severity.WARNING, Action.NONE)
    for code in (13, 31):  # the application's fault: it dies, the GPU is fine
        assert xid_info(code).severity is Severity.WARNING, code
        assert xid_info(code).action is Action.RESTART_APP, code
    assert xid_info(48).action is Action.AFTER_DBE  # the catalogue's WORKFLOW_XID_48
    assert xid_info(137).severity is Severity.INFO  # NVLink privilege error: IGNORE
    assert xid_info(92).severity is Severity.WARNING
    assert xid_info(94).action is Action.RESTART_APP
    assert {XIDS[c].group for c in (48, 63, 64, 92, 94, 95)} == {"memory"}
    unknown = xid_info(9999)
    assert unknown.severity is Severity.WARNING and "not in" in unknown.description


# --- recordings ---------------------------------------------------------------------------


def test_retired_pages_from_a_real_q_capture() -> None:
    gpus = _first("azure-8gpu-retired-pages-q-d.txt").gpus
    assert len(gpus) == 8
    for gpu in gpus:
        assert gpu.retired_pages == RetiredPages(single_bit=0, double_bit=0, pending=False)


def test_remapped_rows_from_real_q_text_xml_and_csv() -> None:
    text = _first("h100-590-q.txt").gpus[0]
    assert text.remapped_rows == RemappedRows(0, 0, False, False)
    assert text.retired_pages == RetiredPages()
    assert text.reason("retired_pages.single_bit") is Reason.NOT_AVAILABLE  # N/A on Hopper
    xml = _first("rtx-a5000x2-v13.xml").gpus[0]
    assert xml.remapped_rows == RemappedRows(0, 0, False, False)
    assert xml.reason("retired_pages.double_bit") is Reason.NOT_AVAILABLE
    csv = _first("csv-h100-590.csv").gpus[0]
    assert csv.remapped_rows == RemappedRows(0, 0, False, False)
    assert csv.retired_pages == RetiredPages()  # `[N/A]` on Hopper, as in `-q`
    assert csv.reason("retired_pages.pending") is Reason.NOT_AVAILABLE


def test_an_old_capture_without_the_sections_says_not_reported() -> None:
    gpu = _first("tesla-t4-v11.xml").gpus[0]
    assert gpu.remapped_rows == RemappedRows()
    assert gpu.reason("remapped_rows.pending") in (Reason.NOT_REPORTED, Reason.NOT_AVAILABLE)


def test_counters_round_trip_through_gputops_own_xml() -> None:
    sick = replace(
        gpu_sample(0),
        remapped_rows=RemappedRows(correctable=4, uncorrectable=2, pending=True, failure=True),
        retired_pages=RetiredPages(single_bit=3, double_bit=1, pending=True),
    )
    back = parse_document(snapshot_to_xml(snapshot(sick))).gpus[0]
    assert back.remapped_rows == sick.remapped_rows
    assert back.retired_pages == sick.retired_pages


# --- problems, --json, --once -------------------------------------------------------------


def _sick(**changes: object) -> Snapshot:
    return snapshot(gpu_sample(0), replace(gpu_sample(1), **changes))  # type: ignore[arg-type]


def test_problems_critical_first_and_a_power_cap_is_none() -> None:
    healthy = gpu_sample(0)
    assert healthy.throttle_reasons == ("sw_power_cap",)
    assert gpu_problems(healthy) == ()
    gpu = _sick(
        remapped_rows=RemappedRows(0, 1, True, False),
        ecc_errors=EccErrors(0, 2, 0, 2),
        throttle_reasons=("hw_thermal_slowdown",),
    ).gpus[1]
    problems = gpu_problems(gpu)
    assert [p.key for p in problems] == ["remap_pending", "ecc_uncorrected", "thermal"]
    assert [p.severity for p in problems] == [Severity.CRITICAL] * 2 + [Severity.WARNING]
    assert "2 uncorrectable ECC errors" in problems[1].text
    lost = gpu_problems(replace(gpu, lost=True))
    assert [p.key for p in lost] == ["lost"]


def test_json_carries_events_health_fields_and_problems() -> None:
    event = xid_event(T0, 1, 79, uuid="GPU-x", gpu_instance_id=None)
    shot = replace(_sick(remapped_rows=RemappedRows(0, 1, False, True)), events=(event,))
    doc = json.loads(json.dumps(snapshot_dict(shot)))
    assert doc["events"] == [
        {
            "time": "2026-11-28T09:00:00",
            "gpu": 1,
            "uuid": "GPU-x",
            "kind": "xid",
            "xid": 79,
            "severity": "critical",
            "action": Action.RESTART_BM.value,
            "description": "GPU has fallen off the bus",
            "gpu_instance_id": None,
            "compute_instance_id": None,
        }
    ]
    sick = doc["gpus"][1]
    assert sick["remapped_rows_failure"] is True
    assert sick["remapped_rows_uncorrectable"] == 1
    assert sick["retired_pages_double_bit"] == 0
    assert sick["problems"][0]["severity"] == "critical"
    assert doc["gpus"][0]["problems"] == []


def test_once_has_one_line_per_gpu_with_a_problem_and_one_per_event() -> None:
    shot = _sick(remapped_rows=RemappedRows(0, 1, True, False), throttle_reasons=("hw_slowdown",))
    shot = replace(shot, events=(xid_event(T0, 1, 48),))
    text = format_summary(shot)
    health = text[text.index("Health:") :].split("\n\n")[0].splitlines()
    assert health[1].split()[:2] == ["1", "CRITICAL:"]
    assert "row remap pending" in health[1] and "hardware slowdown" in health[1]
    assert "XID 48: double-bit ECC error" in health[2]
    assert "2026-11-28 09:00:00" in health[2]
    assert len(health) == 3  # GPU 0 is well: no line
    assert "Health:" not in format_summary(snapshot(gpu_sample(0)))


# --- history and --gpu --------------------------------------------------------------------


def test_the_history_keeps_events_bounded_and_counts_every_event() -> None:
    events = EventHistory(capacity=3)
    for second in range(5):
        events.add([xid_event(T0 + timedelta(seconds=second), 0, 79 if second < 4 else 48)])
    assert [e.xid for e in events.kept] == [79, 79, 48]
    assert events.total == 5
    same = events.kept
    events.add([])
    assert events.kept is same


def test_the_store_files_the_events_of_each_snapshot_and_a_rebuild_replays_them() -> None:
    store = HistoryStore()
    first = replace(snapshot(gpu_sample(0)), events=(xid_event(T0, 0, 13),))
    store.append(first)
    store.append(snapshot(gpu_sample(0)))
    assert [e.xid for e in store.events.kept] == [13]
    store.rebuild([snapshot(gpu_sample(0))])
    assert store.events.kept == ()


def test_gpu_selection_keeps_the_events_of_the_gpus_kept() -> None:
    shot = replace(
        snapshot(gpu_sample(0), gpu_sample(1)),
        events=(xid_event(T0, 0, 79), kind_event(T0, 1, Kind.DOUBLE_BIT_ECC)),
    )
    kept = GpuSelection.parse("1").apply(shot)
    assert [(e.gpu, e.kind) for e in kept.events] == [(1, Kind.DOUBLE_BIT_ECC)]


# --- the exporter -------------------------------------------------------------------------


def _scrape(latest: LatestSample) -> str:
    body, _ = latest.render()
    return body.decode()


def test_the_exporter_shows_the_last_xid_as_dcgm_does_and_counts_every_one() -> None:
    latest = LatestSample(ExportTracker(lambda gpu: "busy"), host="node-1")
    latest.take(snapshot(gpu_sample(0), gpu_sample(1)))
    quiet = series(_scrape(latest))
    assert find(quiet, "DCGM_FI_DEV_XID_ERRORS", gpu="1") == [0.0]
    assert not find(quiet, "gputop_xid_errors_total")
    burst = (xid_event(T0, 1, 79), xid_event(T0, 1, 79), xid_event(T0, 1, 48))
    latest.take(replace(snapshot(gpu_sample(0), gpu_sample(1)), events=burst))
    latest.take(
        replace(
            snapshot(gpu_sample(0), gpu_sample(1)),
            events=(kind_event(T0, 0, Kind.DOUBLE_BIT_ECC),),
        )
    )
    text = _scrape(latest)
    values = series(text)
    assert find(values, "DCGM_FI_DEV_XID_ERRORS", gpu="1", err_code="48") == [48.0]
    assert find(values, "DCGM_FI_DEV_XID_ERRORS", gpu="0") == [0.0]
    counted = "gputop_xid_errors"  # the parser's name of a `_total` counter
    assert find(values, counted, gpu="1", xid="79") == [2.0]
    assert find(values, counted, gpu="1", xid="48") == [1.0]
    assert find(values, "gputop_health_events", gpu="0", event="double_bit_ecc") == [1.0]
    assert "# TYPE gputop_xid_errors_total counter" in text
    assert 'err_msg="double-bit ECC error"' in text


def test_the_exporter_writes_the_memory_repair_counters_under_dcgms_names() -> None:
    latest = LatestSample(ExportTracker(lambda gpu: "busy"), host="node-1")
    latest.take(_sick(remapped_rows=RemappedRows(3, 1, True, False)))
    values = series(_scrape(latest))
    assert find(values, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", gpu="1") == [1.0]
    assert find(values, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", gpu="1") == [3.0]
    assert find(values, "DCGM_FI_DEV_ROW_REMAP_PENDING", gpu="1") == [1.0]
    assert find(values, "DCGM_FI_DEV_ROW_REMAP_FAILURE", gpu="1") == [0.0]
    assert find(values, "DCGM_FI_DEV_RETIRED_DBE", gpu="0") == [0.0]


# --- recordings carry events; `gputop report` lists health over time ---------------------


def _stream() -> list[Snapshot]:
    base = snapshot(gpu_sample(0), gpu_sample(1))
    out = []
    for second in range(8):
        moment = T0 + timedelta(seconds=second)
        gpus = list(base.gpus)
        if 2 <= second < 5:
            gpus[1] = replace(gpus[1], remapped_rows=RemappedRows(0, 1, True, False))
        if second >= 5:
            gpus[1] = replace(gpus[1], remapped_rows=RemappedRows(0, 1, False, False))
        if second in (3, 4):
            gpus[0] = replace(gpus[0], throttle_reasons=("hw_thermal_slowdown",))
        events = (xid_event(moment, 1, 63, uuid=gpus[1].uuid),) if second == 2 else ()
        out.append(replace(base, timestamp=moment, gpus=tuple(gpus), events=events))
    return out


def test_events_round_trip_through_gputops_own_xml() -> None:
    shot = replace(
        snapshot(gpu_sample(0)),
        events=(
            xid_event(T0, 0, 79, uuid="GPU-a"),
            xid_event(T0, 0, 31, gpu_instance_id=2, compute_instance_id=0),
            kind_event(T0, 0, Kind.PAGE_RETIREMENT_FAILURE),
        ),
    )
    back = parse_document(snapshot_to_xml(shot))
    assert back.events == shot.events
    assert parse_document(snapshot_to_xml(snapshot(gpu_sample(0)))).events == ()


def test_the_health_log_lists_changes_with_times_and_parts_merge_as_one() -> None:
    stream = _stream()
    whole = HealthLog()
    for shot in stream:
        whole.add(shot)
    texts = [(c.time and c.time.second, c.gpu, c.text) for c in whole.changes]
    assert (2, 1, "XID 63: GPU memory remapping event (a row remap or page retirement "
            "recorded)") in texts  # fmt: skip
    assert (2, 1, "row remap pending: reset the GPU to apply it (began)") in texts
    assert (2, 1, "rows remapped after uncorrectable errors: 0 -> 1") in texts
    assert (5, 1, "row remap pending: reset the GPU to apply it (ended)") in texts
    assert (3, 0, "thermal slowdown (hw_thermal_slowdown) (began)") in texts
    assert (5, 0, "thermal slowdown (hw_thermal_slowdown) (ended)") in texts
    for cut in (1, 3, 4, 6):
        first, second = HealthLog(), HealthLog()
        for shot in stream[:cut]:
            first.add(shot)
        for shot in stream[cut:]:
            second.add(shot)
        merged = HealthLog.merged([first, second])
        assert sorted(map(repr, merged.changes)) == sorted(map(repr, whole.changes)), cut


def test_report_of_a_recording_lists_health_changes_with_times(tmp_path: Path) -> None:
    path = tmp_path / "health.xml"
    path.write_bytes(b"".join(snapshot_to_xml(shot) for shot in _stream()))
    text = gputop("report", path)
    assert text.returncode == 0, text.stderr
    section = text.stdout[text.stdout.index("Health (events and changes):") :]
    assert "2026-11-28 09:00:02  GPU 1  warning  XID 63" in section
    assert "2026-11-28 09:00:02  GPU 1  critical row remap pending" in section
    assert "2026-11-28 09:00:05  GPU 1  info     row remap pending" in section
    as_json = gputop("report", "--json", path)
    assert as_json.returncode == 0, as_json.stderr
    changes = json.loads(as_json.stdout)["health"]
    began = "row remap pending: reset the GPU to apply it (began)"
    assert {"time": "2026-11-28T09:00:02", "gpu": 1, "severity": "critical", "change": began} in (
        changes
    )
    healthy = tmp_path / "healthy.xml"
    healthy.write_bytes(snapshot_to_xml(snapshot(gpu_sample(0))))
    assert "Health" not in gputop("report", healthy).stdout
