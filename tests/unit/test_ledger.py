"""`gputop report --prometheus`: the GPU-hours ledger against a real Prometheus, and the same
data in a real VictoriaMetrics, holding a week of 64 GPUs on 8 nodes whose truth is known.

The history (``support.ledger_data.week``) is backfilled with ``promtool tsdb
create-blocks-from openmetrics`` and imported into VictoriaMetrics. To keep these tests quick
on two shared cores, it is sampled once per 10 minutes and the ledger steps by 10 minutes
(``--step 10m``; a week's default step is 1 h); every state
changes on a step boundary, so each figure must match the truth within one step.
"""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from gputop import patches
from gputop.cli.report import report_main
from gputop.ledger import prometheus as ledger_prometheus
from gputop.ledger.account import NOT_SEEN, Ledger, Prices, StepCounts, account
from gputop.ledger.prometheus import ledger_from_prometheus
from gputop.ledger.promql import FAMILIES, GroupBy
from gputop.ledger.render import ledger_dict, render_chart, render_csv, render_table
from gputop.ledger.snapshots import ledger_from_snapshots
from gputop.ledger.thresholds import Thresholds
from gputop.model import GpuSample, Memory, Power, Snapshot, Utilization
from gputop.model.owner import Owner
from gputop.sources.prometheus.client import PrometheusClient, Series
from support.command import ROOT, gputop_command
from support.ledger_data import History, week
from support.ledger_servers import backfilled_prometheus, running_victoria
from support.net import free_port

STEP = 600.0
STEP_HOURS = STEP / 3600
FIGURES = {
    "allocated": "allocated",
    "active": "active",
    "idle_held": "idle_held",
    "waiting": "waiting",
    "free": "free",
    "unknown": "unknown",
}


@pytest.fixture(scope="module")
def history() -> History:
    # A week ending on a step boundary a little in the past (within any retention).
    end = math.floor(time.time() / STEP) * STEP - STEP
    return week(end, step=STEP, interval=STEP)


@pytest.fixture(scope="module")
def prometheus(history: History) -> Iterator[str]:
    with backfilled_prometheus(history) as server:
        yield server.url


@pytest.fixture(scope="module")
def victoria(history: History) -> Iterator[str]:
    with running_victoria(history) as url:
        yield url


@pytest.fixture(scope="module")
def by_node(prometheus: str, history: History) -> Ledger:
    client = PrometheusClient(prometheus, timeout=60)
    return ledger_from_prometheus(
        client, GroupBy.NODE, history.start, history.end, STEP, prices=Prices(2.5, 0.3)
    )


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    command, environ = gputop_command()
    return subprocess.run(
        [*command, "report", *args],
        capture_output=True,
        text=True,
        env={**environ, "TZ": "UTC"},
        cwd=ROOT,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat()


def _assert_matches(rows: dict[str, dict[str, float]], truth: dict[str, dict[str, float]]) -> None:
    assert set(rows) == set(truth)
    for group, expected in truth.items():
        got = rows[group]
        for key in FIGURES:
            assert got[key] == pytest.approx(expected.get(key, 0.0), abs=STEP_HOURS), (group, key)
        for key in ("energy_kwh", "idle_held_kwh"):
            assert got[key] == pytest.approx(expected.get(key, 0.0), rel=0.01, abs=0.01), (
                group,
                key,
            )


def _rows(ledger: Ledger) -> dict[str, dict[str, float]]:
    return {
        row.group: {
            "allocated": row.allocated,
            "active": row.active,
            "idle_held": row.idle_held,
            "waiting": row.waiting,
            "free": row.free,
            "unknown": row.unknown,
            "energy_kwh": row.energy_kwh,
            "idle_held_kwh": row.idle_held_kwh,
        }
        for row in ledger.rows
    }


def test_by_node_holds_to_the_truth(by_node: Ledger, history: History) -> None:
    _assert_matches(_rows(by_node), history.truth("node"))
    rows = {row.group: row for row in by_node.rows}
    # A node stale for an hour: its 8 GPUs' hour is unknown, not idle, not dropped.
    assert rows["node-6"].unknown == pytest.approx(8.0, abs=STEP_HOURS)
    # A GPU at 0 % whose exporter reports no memory: unknown, never free.
    assert rows["node-3"].unknown == pytest.approx(7 * 24.0, abs=STEP_HOURS)
    assert by_node.gpus == 64
    # Prometheus counted the samples it read; one probe, then 9 queries per chunk.
    assert by_node.cost.samples and by_node.cost.samples > 0
    assert (by_node.cost.queries - ledger_prometheus.PROBES) % len(FAMILIES) == 0


def test_idle_held_cost_and_longest_stretch(by_node: Ledger, history: History) -> None:
    node0 = next(row for row in by_node.rows if row.group == "node-0")
    assert node0.idle_cost(by_node.prices) == pytest.approx(
        node0.idle_held * 2.5 + node0.idle_held_kwh * 0.3
    )
    start, seconds, gpus = history.longest_idle("node", "node-0")
    assert node0.longest_idle is not None
    assert (node0.longest_idle.start, node0.longest_idle.seconds) == (start, seconds)
    assert seconds == 9 * 3600 + 40 * 60 and gpus == node0.longest_idle.gpus == 2


def test_by_pod_through_the_command(prometheus: str, history: History) -> None:
    result = _report(
        "--prometheus", prometheus, "--since", _iso(history.start), "--until",
        _iso(history.end), "--by", "pod", "--json", "--price-gpu-hour", "2", "--step", "10m",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert document["step_seconds"] == STEP
    rows = {
        g["group"]: {
            **{key: g[f"{key}_gpu_hours"] for key in FIGURES},
            "energy_kwh": g["energy_kwh"],
            "idle_held_kwh": g["idle_held_kwh"],
        }
        for g in document["groups"]
    }
    _assert_matches(rows, history.truth("pod"))
    # Pods that came and went are each their own row.
    assert sum(1 for group in rows if group.startswith("ml/batch-1-")) == 14
    # Not seen: node-6's hour (8 GPUs x 6 steps) and node-7's restart (8 x 2).
    assert rows[NOT_SEEN]["unknown"] == pytest.approx((48 + 16) * STEP_HOURS)
    trainer = next(g for g in document["groups"] if g["group"] == "ml/trainer-7")
    assert trainer["idle_cost"] == pytest.approx(trainer["idle_held_gpu_hours"] * 2)
    assert trainer["longest_idle"]["seconds"] == 9 * 3600 + 40 * 60
    assert document["queries"] >= ledger_prometheus.PROBES + len(FAMILIES)
    assert document["samples"] > 0


def test_the_table_names_the_offenders(by_node: Ledger, history: History) -> None:
    text = render_table(by_node)
    start, _, _ = history.longest_idle("node", "node-0")
    when = datetime.fromtimestamp(start, tz=timezone.utc)
    assert f"node-0: held 2 GPUs idle for 9 h 40 min from {when:%a %H:%M}" in text
    assert "node-2: held 8 GPUs idle for 7 d" in text
    assert "idle at most 1 % activity" in text
    assert "samples read by the server" in text
    lines = text.splitlines()
    assert lines[1].split()[:4] == ["node", "GPUs", "allocated", "active"]
    assert any(line.startswith("total ") for line in lines)


def test_csv_json_and_chart(by_node: Ledger) -> None:
    rows = list(csv.DictReader(io.StringIO(render_csv(by_node))))
    assert {row["group"] for row in rows} == {f"node-{n}" for n in range(8)}
    node2 = next(row for row in rows if row["group"] == "node-2")
    assert float(node2["idle_held_gpu_hours"]) == pytest.approx(8 * 24 * 7, abs=STEP_HOURS)
    document = ledger_dict(by_node)
    assert len(document["daily_idle_held_gpu_hours"]) in (7, 8)
    assert sum(d["gpu_hours"] for d in document["daily_idle_held_gpu_hours"]) == pytest.approx(
        document["total"]["idle_held_gpu_hours"]
    )
    chart = render_chart(by_node, 100, color=False)
    assert chart is not None
    assert "idle-held GPU-hours per day" in chart
    day = datetime.fromtimestamp(by_node.since + 86400, tz=timezone.utc)
    assert f"{day:%a %d}" in chart


def test_victoria_metrics_gives_the_same_ledger(
    victoria: str, by_node: Ledger, history: History
) -> None:
    client = PrometheusClient(victoria, timeout=60)
    ledger = ledger_from_prometheus(client, GroupBy.NODE, history.start, history.end, STEP)
    _assert_matches(_rows(ledger), _rows(by_node))
    assert ledger.cost.samples is None  # VictoriaMetrics does not count them
    for by in (GroupBy.POD, GroupBy.NAMESPACE, GroupBy.GPU_MODEL, GroupBy.USER, GroupBy.JOB):
        ledger = ledger_from_prometheus(client, by, history.start, history.end, STEP)
        _assert_matches(_rows(ledger), history.truth(by.value))


def test_by_user_joins_the_process_owners(prometheus: str, history: History) -> None:
    # The one grouping that joins another family (gputop's process series) onto each GPU.
    client = PrometheusClient(prometheus, timeout=60)
    since, until = history.start, history.start + 86400
    ledger = ledger_from_prometheus(client, GroupBy.USER, since, until, STEP)
    rows = {row.group: row for row in ledger.rows}
    assert set(rows) == {"alice", "bob", "carol", "(none)"}  # no gap on the first day
    assert rows["alice"].allocated == pytest.approx(8 * 24.0, abs=STEP_HOURS)
    assert rows["carol"].idle_held == pytest.approx(2 * 24.0, abs=STEP_HOURS)
    # Each GPU once: the users' GPUs are not counted again among those without one.
    assert ledger.total().allocated == pytest.approx(
        sum(r.allocated for r in rows.values()), abs=1e-6
    )
    assert ledger.gpus == 64


def test_thresholds_and_chunks_change_what_they_should(prometheus: str, history: History) -> None:
    client = PrometheusClient(prometheus, timeout=60)
    since, until = history.start, history.start + 86400
    plain = ledger_from_prometheus(client, GroupBy.NODE, since, until, STEP)
    busy_at_5 = ledger_from_prometheus(
        client, GroupBy.NODE, since, until, STEP, Thresholds(busy_pct=5.0)
    )
    node3 = next(r for r in plain.rows if r.group == "node-3")
    assert node3.waiting == pytest.approx(4 * 24.0, abs=STEP_HOURS)
    # The sweep at 10 % works once busy starts at 5 %.
    assert next(r for r in busy_at_5.rows if r.group == "node-3").waiting == 0.0
    # A day cut into chunks of 40 steps, by samples read or by points returned: the same
    # figures, more queries.
    for budget, size in (("SAMPLE_BUDGET", 64 * 40), ("POINT_BUDGET", 64 * 40)):
        kept = getattr(ledger_prometheus, budget)
        try:
            setattr(ledger_prometheus, budget, size)
            chunked = ledger_from_prometheus(client, GroupBy.NODE, since, until, STEP)
        finally:
            setattr(ledger_prometheus, budget, kept)
        # 144 steps in chunks of 40
        assert chunked.cost.queries == ledger_prometheus.PROBES + len(FAMILIES) * 4
        _assert_matches(_rows(chunked), _rows(plain))


def test_a_power_floor_keeps_a_drawing_gpu_from_idle(
    prometheus: str, history: History, by_node: Ledger
) -> None:
    # gpu-pruner's rule: a GPU drawing at least the floor is not idle at 0 %.
    client = PrometheusClient(prometheus, timeout=60)
    floored = ledger_from_prometheus(
        client, GroupBy.NODE, history.start, history.end, STEP, Thresholds(power_floor_w=100.0)
    )
    plain = {row.group: row for row in by_node.rows}
    rows = {row.group: row for row in floored.rows}
    # ml/trainer-7's idle stretch drew 120 W on 2 GPUs: over the floor, so it waited.
    assert plain["node-0"].idle_held == pytest.approx(2 * (9 + 40 / 60), abs=STEP_HOURS)
    assert rows["node-0"].idle_held == 0.0
    assert rows["node-0"].idle_held_kwh == 0.0
    assert rows["node-0"].waiting == pytest.approx(
        plain["node-0"].waiting + plain["node-0"].idle_held, abs=1e-6
    )
    # The notebook's 90 W and the leaked processes' 80 W are under it: idle as before.
    for node in ("node-2", "node-7"):
        assert rows[node].idle_held > 0
        assert rows[node].idle_held == pytest.approx(plain[node].idle_held, abs=1e-6)
    assert rows["node-0"].allocated == pytest.approx(plain["node-0"].allocated, abs=1e-6)


def test_chunks_shrink_when_a_chunk_holds_more_gpus_than_the_probes_saw(
    prometheus: str, history: History, by_node: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the fleet had been 8 GPUs at each probed moment: the first chunk is cut for 8,
    # the answers hold 64, and the rest are cut for 64, within the point budget.
    client = PrometheusClient(prometheus, timeout=60)
    step = 600.0
    monkeypatch.setattr(ledger_prometheus, "POINT_BUDGET", 64 * 40)
    monkeypatch.setattr(ledger_prometheus, "_scale", lambda *args: (8, step))
    ledger = ledger_from_prometheus(client, GroupBy.NODE, history.start, history.end, step)
    # 1,008 steps: one chunk of 320 (8 GPUs), then 688 in chunks of 40: 18 more.
    assert ledger.cost.queries == ledger_prometheus.PROBES + len(FAMILIES) * (1 + 18)
    _assert_matches(_rows(ledger), _rows(by_node))


def test_a_pod_that_comes_within_a_step_is_one_gpu_not_two() -> None:
    # Prometheus's answer for one GPU whose pod arrived within the second of three 10 min
    # steps: the GPU's series without a pod has samples in steps 1-2, the pod's in 2-3.
    free = {"UUID": "GPU-1", "Hostname": "node-a", "instance": "node-a:9400"}
    held = {**free, "namespace": "ml", "pod": "train-1"}

    def answer(before: float, after: float) -> list[Series]:
        return [
            Series(free, ((600.0, before), (1200.0, before))),
            Series(held, ((1200.0, after), (1800.0, after))),
        ]

    answers = {"util": answer(0.0, 80.0), "memory": answer(0.0, 4096.0), "power": answer(60, 300)}
    for by, rows in (
        (GroupBy.NODE, {"node-a": (2, 1)}),
        (GroupBy.POD, {"ml/train-1": (2, 0), "(none)": (0, 1)}),
    ):
        counts = StepCounts(step=600.0, since=0.0, until=1800.0)
        ledger_prometheus._file_chunk(counts, by, Thresholds(), answers)
        ledger = account(counts, by, Thresholds(), source="test")
        assert ledger.gpus == 1  # not 2 in the step both series cover
        got = {row.group: row for row in ledger.rows}
        assert set(got) == set(rows)
        for group, (held_steps, free_steps) in rows.items():
            assert got[group].allocated == pytest.approx(held_steps * STEP_HOURS)
            assert got[group].free == pytest.approx(free_steps * STEP_HOURS)
            assert got[group].unknown == 0.0
        # The shared step drew the mean of its two parts: (60 + 300) / 2 W.
        energy = sum(row.energy_kwh for row in ledger.rows)
        assert energy == pytest.approx((60 + 180 + 300) * STEP_HOURS / 1000)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--since", "yesterday-ish"), "--since 'yesterday-ish': give 7d, 36h, 90m or an ISO"),
        (("--by", "team"), "argument --by: invalid choice: 'team'"),
        (("--step", "0"), "give a step from 1 s to 1 day"),
        (("--idle-at-most", "-1"), "is not a number of 0 or more"),
        (("--since", "1d", "--until", "2d"), "the span is shorter than one step"),
    ],
)
def test_bad_input_is_one_line(
    args: tuple[str, ...], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    code = report_main(["--prometheus", "http://127.0.0.1:9", *args], out)
    err = capsys.readouterr().err
    assert code == 2
    assert said in err
    assert err.count("\n") <= 2 and "Traceback" not in err
    assert out.getvalue() == ""


def test_an_unreachable_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert report_main(["--prometheus", url, "--since", "1d"], io.StringIO()) == 1
    assert capsys.readouterr().err == (
        f"gputop: cannot reach Prometheus at {url}: connection refused\n"
    )


def _gpu(index: int, util: float, used_mib: int, pod: str | None) -> GpuSample:
    holders = (Owner(pod=pod, namespace="ml"),) if pod else ()
    return GpuSample(
        index=index,
        name="NVIDIA H200",
        uuid=f"GPU-{index}",
        utilization=Utilization(gpu=util),
        memory=Memory(total=141 * 1024**3, used=used_mib * 1024**2),
        power=Power(draw=100.0 + util),
        holders=holders,
    )


def test_the_same_ledger_from_a_recording_with_owners() -> None:
    # One machine, 10 s apart for two hours: GPU 0 held by ml/a, idle then busy; GPU 1 free.
    start = datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc)
    snapshots = [
        Snapshot(
            timestamp=start + timedelta(seconds=10 * k),
            host="h200-box",
            gpus=(
                _gpu(0, 0.0 if k < 360 else 95.0, 40_000, "a"),
                _gpu(1, 0.0, 300, None),
            ),
        )
        for k in range(720)
    ]
    ledger = ledger_from_snapshots(
        snapshots, GroupBy.POD, 60.0, Thresholds(), source="run.xml", prices=Prices(3.0)
    )
    rows = {row.group: row for row in ledger.rows}
    assert set(rows) == {"ml/a", "(none)"}
    assert rows["ml/a"].allocated == pytest.approx(2.0)
    assert rows["ml/a"].idle_held == pytest.approx(1.0)
    assert rows["ml/a"].idle_cost(ledger.prices) == pytest.approx(3.0)
    assert rows["ml/a"].longest_idle is not None
    assert rows["ml/a"].longest_idle.seconds == 3600
    assert rows["(none)"].free == pytest.approx(2.0)
    text = render_table(ledger)
    assert "ml/a: held 1 GPU idle for 1 h from Tue 10:00" in text
    assert "queries" not in text  # a recording asks no server


def test_report_file_by_node_reads_a_real_log() -> None:
    out = io.StringIO()
    log = ROOT / "snapshots" / "gpu-log-v100s-miris.csv"
    assert report_main([str(log), "--by", "gpu-model", "--json", "--utc"], out) == 0
    document = json.loads(out.getvalue())
    assert document["by"] == "gpu-model"
    assert [g["group"] for g in document["groups"]] == ["Tesla V100S-PCIE-32GB"]
    total = document["total"]
    parts = sum(total[f"{k}_gpu_hours"] for k in ("allocated", "free", "unknown"))
    assert parts > 0


def test_the_daily_chart_is_drawn_or_on_another_plotext_left_out_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = ROOT / "snapshots" / "gpu-log-v100s-miris.csv"
    args = [str(log), "--by", "gpu-model", "--charts", "--utc"]
    drawn = io.StringIO()
    assert report_main(args, drawn) == 0
    assert "idle-held GPU-hours per day" in drawn.getvalue()
    monkeypatch.setattr(patches, "_said", set())
    monkeypatch.setattr(patches, "installed_version", lambda package: "5.4.0")
    left_out = io.StringIO()
    assert report_main(args, left_out) == 0
    # The same ledger, without its chart.
    assert "Tesla V100S-PCIE-32GB" in left_out.getvalue()
    assert "idle-held GPU-hours per day" not in left_out.getvalue()
    assert drawn.getvalue().startswith(left_out.getvalue())
    assert capsys.readouterr().err.splitlines() == [
        "gputop: plotext 5.4.0 is not 5.3, which gputop's own_figure patch was written for: "
        "charts left out"
    ]
