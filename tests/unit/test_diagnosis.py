"""Diagnosis rules on constructed histories: each fires when it should and only then."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from gputop.insight.diagnosis import (
    DiagnosisThresholds,
    Finding,
    FindingKind,
    GpuState,
    Severity,
    diagnose,
    gpu_state,
    holds_work,
)
from gputop.model import (
    Activity,
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
from support.shortcuts import gpu_states, limiting_reasons

GIB = 1024**3
T0 = datetime(2024, 9, 18, 14, 0, 0)

TRAINER = ProcessSample(
    pid=4242,
    type="C",
    name="python",
    memory_used=30 * GIB,
    command="/usr/bin/python train.py --epochs 10",
    cpu_percent=98.0,
)


def make_gpu(
    util: float | None = 95.0,
    *,
    index: int = 0,
    used: int | None = 40 * GIB,
    total: int | None = 80 * GIB,
    processes: tuple[ProcessSample, ...] = (TRAINER,),
    reasons: tuple[str, ...] | None = (),
    draw: float | None = 300.0,
    limit: float | None = 400.0,
    temp: float | None = 60.0,
    pstate: str | None = "P0",
    sm: int | None = 1410,
    ecc: EccErrors | None = None,
    lost: bool = False,
) -> GpuSample:
    return GpuSample(
        index=index,
        name="NVIDIA A100-SXM4-80GB",
        uuid=f"GPU-{index}",
        utilization=Utilization(gpu=util, memory=None if util is None else util / 2),
        memory=Memory(total=total, used=used),
        power=Power(draw=draw, limit=limit),
        temperature=Temperature(gpu=temp, slowdown=90.0),
        performance_state=pstate,
        clocks=Clocks(sm=sm, memory=1593),
        max_clocks=Clocks(sm=1410, memory=1593),
        ecc_errors=ecc or EccErrors(),
        throttle_reasons=reasons,
        processes=processes,
        lost=lost,
    )


def history(gpus: Sequence[GpuSample], step: float = 1.0) -> list[Snapshot]:
    """One snapshot per GPU sample, ``step`` seconds apart from T0."""
    return [
        Snapshot(timestamp=T0 + timedelta(seconds=i * step), gpus=(gpu,))
        for i, gpu in enumerate(gpus)
    ]


def steady(count: int, **kwargs: object) -> list[Snapshot]:
    return history([make_gpu(**kwargs) for _ in range(count)])  # type: ignore[arg-type]


def kinds(findings: Sequence[Finding]) -> list[FindingKind]:
    return [f.kind for f in findings]


def conditions(
    snapshots: Sequence[Snapshot], gpu_index: int, **kwargs: object
) -> tuple[Finding, ...]:
    """The findings about the GPU, without the note that the history is too short."""
    found = diagnose(snapshots, gpu_index, **kwargs)  # type: ignore[arg-type]
    return tuple(f for f in found if f.kind is not FindingKind.NO_TREND)


# -- no alarm on a busy GPU ------------------------------------------------------------------


def test_busy_healthy_gpu_has_no_finding() -> None:
    snapshots = steady(120, util=97.0)
    last = snapshots[-1].timestamp
    assert last is not None
    now = last + timedelta(seconds=1)
    assert diagnose(snapshots, 0, now=now) == ()


def test_busy_gpu_with_bursty_utilization_has_no_finding() -> None:
    utils = [100.0, 60.0, 95.0, 40.0] * 20  # averages 73.75%
    assert diagnose(history([make_gpu(u) for u in utils]), 0) == ()


def test_no_snapshots_no_findings() -> None:
    assert diagnose([], 0) == ()


# -- waiting ------------------------------------------------------------------------------


def test_waiting_fires_with_evidence_and_cpu_of_the_owner() -> None:
    (finding,) = diagnose(steady(60, util=12.0), 0)
    assert finding.kind is FindingKind.WAITING
    assert finding.severity is Severity.WARNING
    assert finding.text == (
        "waiting: 1 process holds 30.0GiB but utilization averaged 12% over the last 30s "
        "(likely input-bound; python train.py at 98% CPU)"
    )
    assert finding.since == T0  # the whole history was waiting


def test_waiting_averages_only_the_window() -> None:
    busy = [make_gpu(99.0) for _ in range(300)]
    waiting = [make_gpu(10.0) for _ in range(40)]
    (finding,) = diagnose(history(busy + waiting), 0)
    assert "averaged 10% over the last 30s" in finding.text
    assert finding.since == T0 + timedelta(seconds=300)


def test_waiting_tolerates_spikes_in_the_average() -> None:
    utils = [5.0] * 25 + [80.0] + [5.0] * 10
    findings = diagnose(history([make_gpu(u) for u in utils]), 0)
    assert kinds(findings) == [FindingKind.WAITING]
    # 30 s window = 31 samples: 30 at 5% and one at 80%.
    assert "averaged 7%" in findings[0].text


def test_waiting_with_quiet_cpu_suggests_io_or_idle_session() -> None:
    notebook = replace(TRAINER, command="python -m ipykernel_launcher", cpu_percent=0.5)
    (finding,) = diagnose(steady(40, util=0.0, processes=(notebook,)), 0)
    assert "likely stalled on I/O, or left idle; python -m at 0% CPU" in finding.text


def test_waiting_without_cpu_figures_gives_the_general_hint() -> None:
    from_xml = ProcessSample(pid=7, type="C", name="/opt/conda/bin/python", memory_used=8 * GIB)
    (finding,) = diagnose(steady(40, util=3.0, processes=(from_xml,)), 0)
    assert finding.text.startswith("waiting: 1 process holds 8192MiB but utilization averaged 3%")
    assert "the GPU waits for the CPU or for data" in finding.text
    assert "% CPU" not in finding.text


def test_waiting_counts_processes_and_their_memory() -> None:
    a = replace(TRAINER, pid=1, memory_used=10 * GIB, cpu_percent=40.0)
    b = replace(TRAINER, pid=2, memory_used=12 * GIB, cpu_percent=95.0, command="python loader.py")
    (finding,) = diagnose(steady(40, util=8.0, processes=(a, b)), 0)
    assert "2 processes hold 22.0GiB" in finding.text
    # The busiest CPU first.
    assert "python loader.py at 95% CPU; python train.py at 40% CPU" in finding.text


def test_waiting_when_processes_are_invisible_but_memory_is_held() -> None:
    (finding,) = diagnose(steady(40, util=2.0, processes=(), used=30 * GIB), 0)
    assert finding.kind is FindingKind.WAITING
    assert "30.0GiB is held (no process listed)" in finding.text


def test_waiting_needs_enough_history() -> None:
    # Under 10 s the average means nothing: no waiting, but what is true now is said.
    findings = diagnose(steady(5, util=0.0), 0)
    assert kinds(findings) == [FindingKind.HELD, FindingKind.NO_TREND]
    assert findings[0].text == "held: 1 process holds 30.0GiB at 0% utilization right now"
    assert findings[1].text == "5 snapshots over 4s: no trend yet (the rules need 10s)"


def test_one_snapshot_of_memory_held_at_zero_says_so_and_that_there_is_no_trend() -> None:
    """A one-snapshot replay of 21.9GiB held at 0%: not "nothing to report"."""
    llama = ProcessSample(pid=100477, type="C", name="llama-server", memory_used=22430 * 2**20)
    findings = diagnose(steady(1, util=0.0, processes=(llama,), pstate="P8"), 0)
    assert [(f.kind, f.severity) for f in findings] == [
        (FindingKind.HELD, Severity.INFO),
        (FindingKind.NO_TREND, Severity.INFO),
    ]
    assert findings[0].text == "held: 1 process holds 21.9GiB at 0% utilization right now"
    assert findings[1].text == "one snapshot: no trend"


def test_one_snapshot_of_an_idle_or_busy_gpu_says_only_that_there_is_no_trend() -> None:
    idle = diagnose(steady(1, util=0.0, processes=(), used=5 * 2**20), 0)
    busy = diagnose(steady(1, util=97.0), 0)
    for findings in (idle, busy):
        assert [(f.kind, f.text) for f in findings] == [
            (FindingKind.NO_TREND, "one snapshot: no trend")
        ]
    untimed = [Snapshot(timestamp=None, gpus=(make_gpu(50.0),)) for _ in range(3)]
    assert [f.text for f in diagnose(untimed, 0)] == ["3 snapshots without times: no trend"]


def test_memory_held_by_no_process_and_unknown_utilization_are_not_held_now() -> None:
    # Under MIG nothing says 0%: unknown is not 0, so no "held" line.
    assert kinds(diagnose(steady(1, util=None), 0)) == [FindingKind.NO_TREND]
    # A small amount with no process listed is not work loaded.
    small = steady(1, util=0.0, processes=(), used=200 * 2**20)
    assert kinds(diagnose(small, 0)) == [FindingKind.NO_TREND]
    held = diagnose(steady(1, util=1.0, processes=(), used=20 * GIB), 0)
    assert held[0].text == "held: 20.0GiB is held (no process listed) at 1% utilization right now"


def test_waiting_threshold_is_configurable() -> None:
    snapshots = steady(40, util=12.0)
    assert diagnose(snapshots, 0, thresholds=DiagnosisThresholds(low_utilization_pct=10.0)) == ()


def test_unknown_utilization_never_counts_as_zero() -> None:
    # MIG: the driver gives no utilization, a process holds memory: nothing can be said.
    snapshots = steady(60, util=None)
    assert diagnose(snapshots, 0) == ()
    assert set(gpu_states(snapshots, 0)) == {GpuState.UNKNOWN}


# -- idle ---------------------------------------------------------------------------------


def test_idle_with_clocks_at_idle() -> None:
    snapshots = steady(
        60,
        util=0.0,
        processes=(),
        used=5 * 1024**2,
        pstate="P8",
        sm=210,
        reasons=("gpu_idle",),
        draw=25.0,
    )
    (finding,) = diagnose(snapshots, 0)
    assert finding.kind is FindingKind.IDLE
    assert finding.severity is Severity.INFO
    assert finding.text == "idle: no process for 59s, clocks at idle (P8, SM 210MHz)"
    assert finding.since == T0


def test_idle_with_clocks_kept_up() -> None:
    (finding,) = diagnose(steady(60, util=0.0, processes=(), used=0, pstate="P0", sm=1410), 0)
    assert finding.text == "idle: no process for 59s, yet clocks stay up (P0, SM 1410MHz)"


def test_idle_under_mig_relies_on_the_process_list_not_on_utilization() -> None:
    (finding,) = diagnose(steady(60, util=None, processes=(), used=0, pstate="P0", sm=None), 0)
    assert finding.kind is FindingKind.IDLE


def test_a_desktop_is_not_waiting() -> None:
    xorg = ProcessSample(pid=900, type="G", name="/usr/lib/xorg/Xorg", memory_used=300 * 2**20)
    snapshots = steady(40, util=1.0, processes=(xorg,), used=400 * 2**20)
    assert kinds(diagnose(snapshots, 0)) == [FindingKind.IDLE]


def test_not_idle_when_work_started_within_the_window() -> None:
    gpus = [make_gpu(0.0, processes=(), used=0) for _ in range(30)]
    gpus += [make_gpu(0.0, processes=()) for _ in range(5)]  # 40 GiB now held
    findings = diagnose(history(gpus), 0)
    assert FindingKind.IDLE not in kinds(findings)


# -- throttling ---------------------------------------------------------------------------


def test_thermal_throttling_since_when_it_began() -> None:
    gpus = [make_gpu(95.0) for _ in range(20)]
    gpus += [make_gpu(95.0, reasons=("sw_thermal_slowdown",), temp=87.0) for _ in range(15)]
    (finding,) = diagnose(history(gpus), 0)
    assert finding.kind is FindingKind.THERMAL
    assert finding.severity is Severity.WARNING
    assert finding.since == T0 + timedelta(seconds=20)
    assert finding.text == (
        "thermal throttling since 14:00:20 (sw_thermal_slowdown; GPU at 87C, slows down at 90C)"
    )


def test_throttling_that_ended_is_not_reported() -> None:
    gpus = [make_gpu(95.0, reasons=("hw_thermal_slowdown",)) for _ in range(20)]
    gpus += [make_gpu(95.0) for _ in range(5)]
    assert diagnose(history(gpus), 0) == ()


def test_a_busy_gpu_at_its_power_cap_is_busy_and_the_cap_is_a_fact() -> None:
    """Issue 25: a training job runs a datacenter GPU at its power limit. Busy stays busy;
    the cap is information beside it, not a warning."""
    snapshots = steady(10, reasons=("sw_power_cap",), draw=398.0)
    (finding,) = conditions(snapshots, 0)
    assert finding.kind is FindingKind.POWER
    assert finding.severity is Severity.INFO
    assert finding.text == (
        "busy at the 400W power cap since 14:00:00 (drawing 398W, SM clock 1410MHz)"
    )
    assert gpu_states(snapshots, 0) == [GpuState.BUSY] * 10


def test_the_power_cap_at_low_utilization_holds_the_gpu_back() -> None:
    snapshots = steady(10, util=8.0, reasons=("sw_power_cap",), draw=395.0)
    (power, *_others) = conditions(snapshots, 0)
    assert power.kind is FindingKind.POWER
    assert power.severity is Severity.WARNING
    assert power.text == (
        "power capped at low utilization since 14:00:00 (drawing 395W of a 400W limit at 8% "
        "utilization: the power limit, not the work, holds the GPU back)"
    )
    assert gpu_states(snapshots, 0) == [GpuState.THROTTLED] * 10


def test_a_cap_that_outlasts_the_load_for_a_moment_is_no_throttling() -> None:
    """The H200 still reports sw_power_cap a second after its load stopped, at 0% and half
    its limit: that GPU is waiting, not held back, and nothing is said of the cap."""
    gpus = [make_gpu(97.0, reasons=("sw_power_cap",), draw=398.0) for _ in range(10)]
    gpus.append(make_gpu(0.0, reasons=("sw_power_cap",), draw=190.0))
    assert gpu_states(history(gpus), 0)[-1] is GpuState.WAITING
    assert FindingKind.POWER not in kinds(conditions(history(gpus), 0))


def test_power_brake_is_a_warning() -> None:
    (finding,) = conditions(steady(10, reasons=("hw_slowdown", "hw_power_brake_slowdown")), 0)
    assert finding.kind is FindingKind.POWER
    assert finding.severity is Severity.WARNING
    assert finding.text.startswith("power brake since 14:00:00 (hw_power_brake_slowdown")


def test_hardware_slowdown_alone() -> None:
    (finding,) = conditions(steady(10, reasons=("hw_slowdown",)), 0)
    assert finding.kind is FindingKind.SLOWDOWN


def test_a_hardware_slowdown_is_said_beside_a_busy_power_cap() -> None:
    found = conditions(steady(10, reasons=("sw_power_cap", "hw_slowdown"), draw=398.0), 0)
    assert kinds(found) == [FindingKind.SLOWDOWN, FindingKind.POWER]
    assert gpu_states(steady(3, reasons=("sw_power_cap", "hw_slowdown")), 0) == (
        [GpuState.THROTTLED] * 3
    )


def test_benign_clock_reasons_are_not_throttling() -> None:
    reasons = ("gpu_idle", "applications_clocks_setting", "sync_boost", "display_clocks_setting")
    assert limiting_reasons(reasons) == ()
    assert diagnose(steady(40, reasons=reasons), 0) == ()


def test_single_snapshot_reports_point_in_time_conditions_only() -> None:
    snapshot = steady(1, util=0.0, reasons=("sw_thermal_slowdown",))
    finding, held = conditions(snapshot, 0)
    assert held.kind is FindingKind.HELD
    assert finding.kind is FindingKind.THERMAL
    assert finding.text.startswith("thermal throttling (")  # no "since" from one sample


# -- memory, ECC, staleness, lost ---------------------------------------------------------


def test_memory_nearly_full() -> None:
    used = int(80 * GIB * 0.97)
    (finding,) = conditions(steady(5, used=used), 0)
    assert finding.kind is FindingKind.MEMORY_FULL
    assert finding.text == "memory 97% full since 14:00:00 (77.6GiB of 80.0GiB)"


def test_memory_below_the_threshold_is_fine() -> None:
    assert conditions(steady(5, used=int(80 * GIB * 0.9)), 0) == ()


def test_ecc_errors_rising() -> None:
    gpus = [
        make_gpu(95.0, ecc=EccErrors(volatile_corrected=c, volatile_uncorrected=u))
        for c, u in [(3, 0)] * 10 + [(5, 0)] * 10 + [(8, 1)] * 10
    ]
    (finding,) = diagnose(history(gpus), 0)
    assert finding.kind is FindingKind.ECC
    assert finding.severity is Severity.CRITICAL
    assert finding.text == "ECC errors rising: +1 uncorrected, +5 corrected over the last 29s"
    assert finding.since == T0 + timedelta(seconds=10)


def test_constant_ecc_counts_are_not_rising() -> None:
    ecc = EccErrors(volatile_corrected=12, volatile_uncorrected=0)
    assert diagnose(steady(40, ecc=ecc), 0) == ()


def test_corrected_only_is_a_warning_from_aggregate_counters() -> None:
    gpus = [make_gpu(95.0, ecc=EccErrors(aggregate_corrected=n)) for n in (1, 1, 2)]
    (finding,) = conditions(history(gpus), 0)
    assert finding.severity is Severity.WARNING
    assert "+1 corrected" in finding.text


def test_stale_data() -> None:
    snapshots = steady(10)
    last = snapshots[-1].timestamp
    assert last is not None
    (finding,) = conditions(snapshots, 0, now=last + timedelta(seconds=12))
    assert finding.kind is FindingKind.STALE
    assert finding.text == "stale: no data for 12s"
    assert finding.since == last
    assert conditions(snapshots, 0, now=last + timedelta(seconds=5)) == ()


def test_stale_compares_aware_now_with_naive_local_timestamps() -> None:
    snapshots = steady(10)
    last = snapshots[-1].timestamp
    assert last is not None
    aware_now = (last + timedelta(seconds=30)).astimezone(timezone.utc)
    assert kinds(conditions(snapshots, 0, now=aware_now)) == [FindingKind.STALE]


def test_stale_sampling_flag() -> None:
    snapshots = steady(5)
    snapshots[-1] = replace(snapshots[-1], gpus=(replace(snapshots[-1].gpus[0], stale=True),))
    (finding,) = conditions(snapshots, 0)
    assert finding.kind is FindingKind.STALE
    assert "no new values" in finding.text and "hung driver call" in finding.text


def test_lost_gpu_is_critical_and_says_nothing_else() -> None:
    gpus = [make_gpu(0.0) for _ in range(40)] + [make_gpu(None, lost=True) for _ in range(3)]
    (finding,) = diagnose(history(gpus), 0)
    assert finding.kind is FindingKind.LOST
    assert finding.severity is Severity.CRITICAL
    assert finding.text == "lost: the GPU stopped answering since 14:00:40"


def test_gpu_missing_from_the_latest_snapshot() -> None:
    snapshots = steady(5)
    snapshots.append(Snapshot(timestamp=T0 + timedelta(seconds=5), gpus=()))
    (finding,) = diagnose(snapshots, 0)
    assert finding.text == "missing: GPU 0 is not in the latest snapshot (last seen 14:00:04)"
    assert diagnose(snapshots, 7) == ()  # never seen: nothing to say


def test_findings_are_worst_first_and_per_gpu() -> None:
    sick = make_gpu(
        95.0,
        used=int(80 * GIB * 0.99),
        reasons=("sw_power_cap", "hw_thermal_slowdown"),
        ecc=EccErrors(volatile_uncorrected=1),
    )
    healthy = make_gpu(95.0, index=1)
    first = Snapshot(T0, (make_gpu(95.0, ecc=EccErrors(volatile_uncorrected=0)), healthy))
    second = Snapshot(T0 + timedelta(seconds=1), (sick, healthy))
    findings = conditions([first, second], 0)
    assert [f.severity for f in findings] == sorted((f.severity for f in findings), reverse=True)
    assert kinds(findings) == [
        FindingKind.ECC,
        FindingKind.THERMAL,
        FindingKind.MEMORY_FULL,
        FindingKind.POWER,
    ]
    assert conditions([first, second], 1) == ()


def test_a_gpu_found_wherever_it_sits_in_the_snapshot() -> None:
    # A --gpu selection keeps GPU 1 alone, at position 0; a capture may list GPUs out of order.
    alone = [Snapshot(s.timestamp, (make_gpu(12.0, index=1),)) for s in steady(60)]
    swapped = [
        Snapshot(s.timestamp, (make_gpu(12.0, index=1), make_gpu(97.0, index=0)))
        for s in steady(60)
    ]
    for snapshots in (alone, swapped):
        (finding,) = diagnose(snapshots, 1)
        assert finding.kind is FindingKind.WAITING and "averaged 12%" in finding.text
    assert diagnose(swapped, 0) == ()


def test_the_window_mixes_aware_and_naive_timestamps() -> None:
    naive = steady(60, util=12.0)
    aware = [
        Snapshot(s.timestamp.astimezone(timezone.utc), s.gpus)  # type: ignore[union-attr]
        if i % 2
        else s
        for i, s in enumerate(naive)
    ]
    assert diagnose(aware, 0) == diagnose(naive, 0)
    (finding,) = diagnose(aware, 0)
    assert "over the last 30s" in finding.text


# -- per-sample state ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "state"),
    [
        (make_gpu(95.0), GpuState.BUSY),
        (make_gpu(30.0), GpuState.BUSY),
        (make_gpu(29.0), GpuState.WAITING),
        (make_gpu(0.0, processes=(), used=0), GpuState.IDLE),
        (make_gpu(0.0, processes=(), used=None), GpuState.IDLE),
        (make_gpu(12.0, processes=(), used=0), GpuState.WAITING),  # kernels run: someone's
        (make_gpu(None, processes=(), used=0), GpuState.IDLE),
        (make_gpu(None, processes=(), used=None), GpuState.UNKNOWN),
        (make_gpu(None), GpuState.UNKNOWN),
        (make_gpu(95.0, reasons=("sw_thermal_slowdown",)), GpuState.THROTTLED),
        (make_gpu(0.0, reasons=("gpu_idle",), processes=(), used=0), GpuState.IDLE),
        (make_gpu(95.0, lost=True), GpuState.UNKNOWN),
        (None, GpuState.UNKNOWN),
    ],
)
def test_gpu_state(gpu: GpuSample | None, state: GpuState) -> None:
    assert gpu_state(gpu) is state


def test_holds_work_cannot_tell_without_any_evidence() -> None:
    assert holds_work(make_gpu(None, processes=(), used=None)) is None
    assert holds_work(make_gpu(None, processes=(), used=2 * GIB)) is True


# -- the input: engine activity where measured, else utilization ---------------------------


def with_activity(gpu: GpuSample, graphics: float | None) -> GpuSample:
    return replace(gpu, activity=Activity(graphics=graphics, sm=graphics))


def test_engine_activity_decides_the_state_where_gpm_measured_it() -> None:
    # Utilization's sampling read 100 % of a GPU whose engines were busy 2 % of the time
    # (dcgm-exporter issue 341), and 10 % of one busy 60 %.
    assert gpu_state(with_activity(make_gpu(100.0), 2.0)) is GpuState.WAITING
    assert gpu_state(with_activity(make_gpu(10.0), 60.0)) is GpuState.BUSY
    idle = make_gpu(3.0, processes=(), used=0)
    assert gpu_state(with_activity(idle, 0.0)) is GpuState.IDLE
    # Without GPM (older GPUs, recordings): utilization, as before.
    assert gpu_state(with_activity(make_gpu(10.0), None)) is GpuState.WAITING


def test_the_waiting_finding_names_the_engine_activity_it_averaged() -> None:
    gpus = [with_activity(make_gpu(100.0), 4.0) for _ in range(60)]
    (finding,) = diagnose(history(gpus), 0)
    assert finding.kind is FindingKind.WAITING
    assert finding.text.startswith(
        "waiting: 1 process holds 30.0GiB but engine activity averaged 4% over the last 30s"
    )
    (held,) = [f for f in diagnose(history(gpus[:1]), 0) if f.kind is FindingKind.HELD]
    assert held.text == "held: 1 process holds 30.0GiB at 4% engine activity right now"
