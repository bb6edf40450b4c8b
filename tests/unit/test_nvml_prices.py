"""Each NVML call is priced once (``sources/nvml/prices.py``), and made as often as its price
allows: the energy counter every 10 s, MIG mode and the other slow values every few seconds,
per-process utilization and MIG activity only while something shows or writes them, PCIe
throughput never on the sampling thread. The table's figures are the ones recorded on a real
H200 (``snapshots/nvml-prices-h200.tsv``), which the fake NVML can also charge.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pynvml  # noqa: TID251 -- the source under test is handed the real pynvml
import pytest

from fakes.nvml_fake import Call, FakeNvml, Faults, load_prices
from fakes.nvml_install import ENV_COSTS, installed, price
from fakes.nvml_scenarios import gpu_sample, h100_mig_box, mig_gpu, plain_box, snapshot
from gputop.cli.live import EXPORT_GPM_EVERY
from gputop.model import Reason, Snapshot
from gputop.sources.nvml.device import SLOW_REFRESH
from gputop.sources.nvml.gpm import GpmCadence
from gputop.sources.nvml.prices import (
    CHEAP_US,
    ENERGY_REFRESH,
    ENERGY_UNSHOWN_REFRESH,
    MIG_ACTIVITY,
    PRICES,
    PROCESS_UTILIZATION_REFRESH,
    SM_UTILIZATION,
    Cadence,
)
from gputop.sources.nvml.source import NvmlSource

PRICES_FILE = Path(__file__).resolve().parents[2] / "snapshots" / "nvml-prices-h200.tsv"
SYSTEM = {"nvmlInitWithFlags", "nvmlShutdown", "nvmlDeviceGetCount_v2", "nvmlErrorString"}
"""Calls made once by the source as it opens and closes, not by the sampler's ticks."""
STARTING = {"nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion_v2"}


class Clock:
    """Monotonic seconds that only move when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def _source(
    fake: FakeNvml,
    clock: Clock,
    *,
    seldom: frozenset[str] = frozenset(),
    shown: Callable[[], frozenset[int] | None] | None = None,
    deadline: float | None = None,
) -> Iterator[NvmlSource]:
    with installed(fake):
        pynvml.nvmlInit()
        polled = NvmlSource(
            pynvml,
            deadline=deadline,
            host="testhost",
            shutdown_on_close=True,
            clock=clock,
            seldom=seldom,
            shown=shown,
        )
        try:
            yield polled
        finally:
            polled.close()


def _run(
    box: Snapshot | list[Snapshot],
    seconds: int,
    *,
    seldom: frozenset[str] = frozenset(),
    shown: Callable[[], frozenset[int] | None] | None = None,
    deadline: float | None = None,
) -> list[tuple[Snapshot, list[Call]]]:
    """Poll once a second for ``seconds`` seconds; each tick's snapshot and calls."""
    fake = FakeNvml(box)
    clock = Clock()
    ticks = []
    with _source(fake, clock, seldom=seldom, shown=shown, deadline=deadline) as polled:
        for _ in range(seconds):
            mark = fake.mark()
            got = polled.poll()
            ticks.append((got, fake.calls_since(mark)))
            clock.now += 1.0
    return ticks


def _count(calls: list[Call], name: str) -> int:
    return sum(1 for call in calls if call.name == name)


# -- the table --------------------------------------------------------------------------


def test_every_call_of_a_tick_is_priced_on_every_kind_of_box() -> None:
    boxes = [plain_box(2), h100_mig_box(2, 7, 20), snapshot(mig_gpu(), gpu_sample(1))]
    for box in boxes:
        made = {call.name for _, calls in _run(box, 12) for call in calls}
        unpriced = made - set(PRICES) - SYSTEM - STARTING
        assert not unpriced, f"calls with no row in prices.PRICES: {sorted(unpriced)}"


def test_the_table_holds_the_figures_recorded_on_the_h200() -> None:
    recorded: dict[str, tuple[float, str]] = {}
    for line in PRICES_FILE.read_text().splitlines():
        if line and not line.startswith("#"):
            name, figure, _wall, note = line.split("\t")
            recorded[name] = (float(figure), note)
    for name, row in PRICES.items():
        if name not in recorded:
            assert row.cpu_us is None, f"{name}: a figure the recording does not have"
            continue
        cpu_us, note = recorded[name]
        if note.startswith("no figure"):
            assert row.cpu_us is None, name  # the fake charges an estimate; the table says so
        else:
            assert row.cpu_us == cpu_us, name
    # The fake's file parses, with the wall time where it differs (PCIe throughput).
    prices = load_prices(PRICES_FILE)
    assert prices["nvmlDeviceGetPcieThroughput"] == pytest.approx((792.3e-6, 20863.4e-6))
    assert prices["nvmlDeviceGetMemoryInfo_v2"] == pytest.approx((28.1e-6, 28.1e-6))


def test_what_costs_more_than_a_cheap_call_is_not_made_every_tick() -> None:
    for name, row in PRICES.items():
        if row.cpu_us is not None and row.cpu_us > CHEAP_US:
            assert row.cadence is not Cadence.TICK, name


def test_a_steady_tick_makes_only_cheap_calls_and_wanted_ones() -> None:
    for box in (plain_box(2), h100_mig_box(2, 7, 20)):
        ticks = _run(box, 4)
        for _, calls in ticks[1:]:  # neither a slow nor an energy tick
            for call in calls:
                cadence = PRICES[call.name].cadence
                assert cadence in (Cadence.TICK, Cadence.WANTED), call.name


# -- each cadence -----------------------------------------------------------------------


def test_the_energy_counter_is_read_once_every_ten_seconds_where_it_is_written() -> None:
    seldom: frozenset[str] = frozenset()  # gputop export
    box = [
        snapshot(
            *(replace(g, power=replace(g.power, energy=1000.0 + n)) for g in plain_box(2).gpus)
        )
        for n in range(35)
    ]
    ticks = _run(box, 35, seldom=seldom)
    read_at = [
        n
        for n, (_, calls) in enumerate(ticks)
        if _count(calls, "nvmlDeviceGetTotalEnergyConsumption")
    ]
    assert ENERGY_REFRESH == 10.0
    assert read_at == [0, 10, 20, 30]
    assert all(
        _count(calls, "nvmlDeviceGetTotalEnergyConsumption") == 2
        for _, calls in (ticks[0], ticks[10])
    )
    # In between, the last reading is held: never None, never 0.
    for number, (got, _) in enumerate(ticks):
        assert [g.power.energy for g in got.gpus] == [1000.0 + number // 10 * 10] * 2
        assert all(g.reason("power.energy") is None for g in got.gpus)


def test_an_energy_read_that_fails_is_tried_again_the_next_tick() -> None:
    fake = FakeNvml(
        plain_box(1),
        Faults(errors={(0, "nvmlDeviceGetTotalEnergyConsumption"): pynvml.NVML_ERROR_UNKNOWN}),
    )
    clock = Clock()
    with _source(fake, clock) as polled:
        first = polled.poll()
        del fake.faults.errors[(0, "nvmlDeviceGetTotalEnergyConsumption")]
        clock.now += 1.0
        mark = fake.mark()
        second = polled.poll()
        retried = _count(fake.calls_since(mark), "nvmlDeviceGetTotalEnergyConsumption")
    assert first.gpus[0].power.energy is None
    assert retried == 1 and second.gpus[0].power.energy == plain_box(1).gpus[0].power.energy


def test_mig_mode_is_read_on_the_slow_cadence_not_every_tick() -> None:
    for box in (plain_box(2), h100_mig_box(2, 7, 20)):
        ticks = _run(box, 12)
        read_at = [n for n, (_, calls) in enumerate(ticks) if _count(calls, "nvmlDeviceGetMigMode")]
        assert SLOW_REFRESH == 5.0
        assert read_at == [0, 5, 10]
        # and the mode is the same on every tick
        assert len({tuple(g.mig_mode for g in got.gpus) for got, _ in ticks}) == 1


def test_mig_switched_on_is_read_the_tick_after_a_process_shows_in_an_instance() -> None:
    off = snapshot(gpu_sample(0, name="NVIDIA H100 80GB HBM3", processes=()))
    on = snapshot(mig_gpu(processes_per_instance=1))
    ticks = _run([off, off, on, on], 4)
    modes = [got.gpus[0].mig_mode for got, _ in ticks]
    assert modes == [False, False, False, True]  # not waiting for the 5 s cadence
    assert len(ticks[3][0].gpus[0].mig_devices) == 7


def test_per_process_utilization_is_not_read_when_nothing_shows_or_writes_it() -> None:
    ticks = _run(plain_box(2), 3, seldom=frozenset({SM_UTILIZATION}))
    for got, calls in ticks:
        assert _count(calls, "nvmlDeviceGetProcessUtilization") == 0
        assert got.gpus[0].processes  # the processes are still listed
        assert all(p.sm_utilization is None for g in got.gpus for p in g.processes)
    shown = _run(plain_box(2), 5)
    # Every 2 s while wanted, as nvitop reads it (the first tick sizes the kept array: two
    # calls a GPU).
    assert PROCESS_UTILIZATION_REFRESH == 2.0
    asked = [_count(calls, "nvmlDeviceGetProcessUtilization") for _, calls in shown]
    assert asked == [4, 0, 2, 0, 2]
    # and held in between
    assert [p.sm_utilization for p in shown[1][0].gpus[0].processes] == [
        p.sm_utilization for p in shown[0][0].gpus[0].processes
    ]


def test_a_new_process_has_its_utilization_read_at_once() -> None:
    base = plain_box(1).gpus[0]
    newcomer = replace(base.processes[0], pid=31337, sm_utilization=42.0)
    grown = snapshot(replace(base, processes=(*base.processes, newcomer)))
    ticks = _run([snapshot(base), snapshot(base), grown, grown], 4)
    asked = [_count(calls, "nvmlDeviceGetProcessUtilization") for _, calls in ticks]
    assert asked[1] == 0 and asked[2] >= 1  # between the 2 s reads, for the newcomer
    assert {p.pid: p.sm_utilization for p in ticks[2][0].gpus[0].processes}[31337] == 42.0


def test_per_process_utilization_is_read_for_the_gpus_with_a_process_on_screen() -> None:
    box = plain_box(2)
    second = box.gpus[1]
    # GPU 1 runs other PIDs than GPU 0.
    box = replace(
        box,
        gpus=(
            box.gpus[0],
            replace(
                second, processes=tuple(replace(p, pid=p.pid + 50000) for p in second.processes)
            ),
        ),
    )
    on_screen: frozenset[int] | None = frozenset({box.gpus[0].processes[0].pid})
    fake = FakeNvml(box)
    clock = Clock()
    with _source(fake, clock, shown=lambda: on_screen) as polled:
        mark = fake.mark()
        first = polled.poll()
        asked = [
            c.gpu for c in fake.calls_since(mark) if c.name == "nvmlDeviceGetProcessUtilization"
        ]
        on_screen = frozenset()  # the table scrolled away, or shows no rows
        clock.now += 1.0
        mark = fake.mark()
        held = polled.poll()
        none_asked = _count(fake.calls_since(mark), "nvmlDeviceGetProcessUtilization")
        on_screen = None  # the MIG tree: every process may be seen
        clock.now += 1.0
        mark = fake.mark()
        polled.poll()
        all_asked = [
            c.gpu for c in fake.calls_since(mark) if c.name == "nvmlDeviceGetProcessUtilization"
        ]
    assert set(asked) == {0}
    assert none_asked == 0
    assert set(all_asked) == {0, 1}
    # What was read is held while not shown, as the other slow values are.
    assert [p.sm_utilization for p in held.gpus[0].processes] == [
        p.sm_utilization for p in first.gpus[0].processes
    ]
    assert any(p.sm_utilization is not None for p in held.gpus[0].processes)


def test_mig_activity_is_not_read_when_nothing_shows_or_writes_it() -> None:
    box = h100_mig_box(2, 7, 20)
    quiet = _run(box, 3, seldom=frozenset({MIG_ACTIVITY}))
    for got, calls in quiet:
        for name in ("nvmlGpmMetricsGet", "nvmlGpmMigSampleGet", "nvmlGpmSampleAlloc"):
            assert _count(calls, name) == 0, name
        assert all(len(g.mig_devices) == 7 for g in got.gpus)
        assert all(d.utilization.gpu is None for g in got.gpus for d in g.mig_devices)
    wanted = _run(box, 3)
    assert _count(wanted[2][1], "nvmlGpmMetricsGet") == 14
    assert all(d.utilization.gpu is not None for g in wanted[2][0].gpus for d in g.mig_devices)


def test_pcie_throughput_is_never_read_by_the_sampler() -> None:
    for box in (plain_box(2), h100_mig_box(2, 7, 20)):
        for deadline in (None, 2.0):  # inline, and on the sampling thread the poll waits for
            ticks = _run(box, 12, deadline=deadline)
            assert all(_count(calls, "nvmlDeviceGetPcieThroughput") == 0 for _, calls in ticks)
    assert PRICES["nvmlDeviceGetPcieThroughput"].cadence is Cadence.NEVER_WAITED


# -- the priced fake ----------------------------------------------------------------------


def test_the_priced_fake_spends_each_call_s_cpu_on_the_calling_thread() -> None:
    fake = FakeNvml(plain_box(1), Faults(prices=load_prices(PRICES_FILE)))
    with installed(fake):
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        started = time.thread_time()
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        energy = time.thread_time() - started
        started = time.thread_time()
        pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
        temperature = time.thread_time() - started
        wall = time.perf_counter()
        cpu = time.thread_time()
        with pytest.raises(pynvml.NVMLError):  # the fake's A6000 reports no PCIe throughput
            pynvml.nvmlDeviceGetPcieThroughput(handle, pynvml.NVML_PCIE_UTIL_TX_BYTES)
        pcie_wall, pcie_cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert energy >= 4983.3e-6
    assert temperature < energy / 10
    assert pcie_wall >= 20863.4e-6 and pcie_cpu < pcie_wall / 2  # asleep for the most part
    assert fake.priced_calls["nvmlDeviceGetTotalEnergyConsumption"] == 1


def test_the_fake_charges_nothing_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml(plain_box(1))
    spent: list[str] = []
    fake.spend = lambda name, cpu, wall: spent.append(name)
    with installed(fake):
        pynvml.nvmlInit()
        pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(0))
    assert spent == [] and not fake.priced_calls
    # GPUTOP_FAKE_NVML_COSTS names the file (how a subprocess's fake is priced).
    price(fake, {ENV_COSTS: str(PRICES_FILE)})
    with installed(fake):
        pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(0))
    assert spent == ["nvmlDeviceGetTotalEnergyConsumption"]


def test_a_prices_file_that_is_not_one_is_refused_naming_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "prices.tsv"
    bad.write_text("# fine\nnvmlDeviceGetPowerUsage\tfast\t-\tno\n")
    with pytest.raises(ValueError, match=r"prices.tsv:2: .*nvmlDeviceGetPowerUsage"):
        load_prices(bad)
    bad.write_text("nvmlDeviceGetPowerUsage\t10\t5\twall below cpu\n")
    with pytest.raises(ValueError, match=r"prices.tsv:1: not a price"):
        load_prices(bad)


def test_a_priced_tick_costs_what_its_calls_are_priced() -> None:
    """The sampler on the priced fake: a steady tick of one GPU costs what its calls cost on
    the H200 (tens of microseconds), an energy tick 5 ms more."""
    fake = FakeNvml(plain_box(1), Faults(prices=load_prices(PRICES_FILE)))
    clock = Clock()
    with _source(fake, clock) as polled:
        polled.poll()
        costs = []
        for _ in range(11):
            clock.now += 1.0
            before = dict(fake.priced_calls)
            polled.poll()
            costs.append(Counter({k: v - before.get(k, 0) for k, v in fake.priced_calls.items()}))
    energy_ticks = [n for n, c in enumerate(costs) if c["nvmlDeviceGetTotalEnergyConsumption"]]
    assert energy_ticks == [9]  # 10 s after the first
    assert [c["nvmlDeviceGetProcessUtilization"] for c in costs] == [0, 1] * 5 + [0]


def test_mig_activity_is_read_while_a_view_shows_it_and_starts_over_after() -> None:
    box = h100_mig_box(2, 7, 20)
    shown = False
    fake = FakeNvml(box)
    clock = Clock()
    ticks: list[tuple[Snapshot, int]] = []
    with installed(fake):
        pynvml.nvmlInit()
        polled = NvmlSource(
            pynvml,
            deadline=None,
            host="testhost",
            shutdown_on_close=True,
            clock=clock,
            mig_shown=lambda: shown,
        )
        try:
            for step in range(6):
                shown = step in (2, 3, 5)  # the MIG tree opened, closed, opened again
                mark = fake.mark()
                got = polled.poll()
                ticks.append((got, _count(fake.calls_since(mark), "nvmlGpmMetricsGet")))
                clock.now += 1.0
        finally:
            polled.close()
    assert [metrics for _, metrics in ticks] == [0, 0, 0, 14, 0, 0]
    # A rate needs two samples a tick apart: the first tick shown says n/a, not an average
    # since the tree was last open.
    for step, (got, _) in enumerate(ticks):
        values = [d.utilization.gpu for g in got.gpus for d in g.mig_devices]
        assert all(v is not None for v in values) == (step == 3), step


def test_hidden_mig_windows_leave_the_tui_budget_to_the_windows_that_measure() -> None:
    """A GPU's MIG tree closed: its instances' windows stop counting in the GPM budget, so
    another GPU's activity is not spaced out for windows that measure nothing."""
    shown = True
    cadence = GpmCadence(budget=0.003)
    counted = []
    with installed(FakeNvml(h100_mig_box(1, 7, 20))):
        pynvml.nvmlInit()
        polled = NvmlSource(
            pynvml,
            deadline=None,
            host="testhost",
            shutdown_on_close=True,
            clock=Clock(),
            mig_shown=lambda: shown,
            gpm_cadence=cadence,
        )
        try:
            for step in range(6):
                shown = step in (0, 1, 4)  # open, closed, open again
                polled.poll()
                counted.append(cadence.windows)
        finally:
            polled.close()
    assert counted == [7, 7, 0, 0, 7, 0]
    assert cadence.windows == 0  # closed: nothing left counted


def test_an_energy_counter_nothing_shows_is_read_once_a_minute() -> None:
    # The TUI, --record, --json: none of them has the energy counter.
    seldom = frozenset({"clocks.graphics", "clocks.video", "power.energy"})
    ticks = _run(plain_box(1), 130, seldom=seldom)
    read_at = [
        n for n, (_, c) in enumerate(ticks) if _count(c, "nvmlDeviceGetTotalEnergyConsumption")
    ]
    assert ENERGY_UNSHOWN_REFRESH == 60.0
    assert read_at == [0, 60, 120]
    assert all(got.gpus[0].power.energy is not None for got, _ in ticks)


def test_a_sink_scraped_seldom_has_mig_activity_over_its_scrape_interval() -> None:
    box = h100_mig_box(2, 7, 20)
    fake = FakeNvml(box)
    clock = Clock()
    counts: list[tuple[int, int]] = []
    values = []
    with installed(fake):
        pynvml.nvmlInit()
        polled = NvmlSource(
            pynvml,
            deadline=None,
            host="testhost",
            shutdown_on_close=True,
            clock=clock,
            gpm_cadence=GpmCadence(every=EXPORT_GPM_EVERY),
        )
        try:
            for _ in range(23):
                mark = fake.mark()
                got = polled.poll()
                calls = fake.calls_since(mark)
                counts.append(
                    (_count(calls, "nvmlGpmMigSampleGet"), _count(calls, "nvmlGpmMetricsGet"))
                )
                values.append([d.utilization.gpu for g in got.gpus for d in g.mig_devices])
                clock.now += 1.0
        finally:
            polled.close()
    assert EXPORT_GPM_EVERY == 15.0
    # A first sample, a first rate the next tick (an exporter has a value at once), then a
    # sample and a rate every 15 s (a scrape interval): the mean over them.
    read = [n for n, (samples, _) in enumerate(counts) if samples]
    assert read == [0, 1, 16]
    assert [n for n, (_, metrics) in enumerate(counts) if metrics] == [1, 16]
    assert all(samples == 14 for samples, _ in (counts[0], counts[1], counts[16]))
    assert all(v is None for v in values[0])
    for step in range(1, 23):  # held between reads, never n/a
        assert values[step] == values[1], step


def test_a_held_per_process_utilization_keeps_the_reason_it_was_not_read() -> None:
    fake = FakeNvml(
        plain_box(1),
        Faults(errors={(0, "nvmlDeviceGetProcessUtilization"): pynvml.NVML_ERROR_NO_PERMISSION}),
    )
    clock = Clock()
    with _source(fake, clock) as polled:
        ticks = []
        for _ in range(3):
            ticks.append(polled.poll().gpus[0])
            clock.now += 1.0
    for gpu in ticks:  # read on the first and third ticks, held on the second
        assert gpu.reason("processes.sm_utilization") is Reason.NO_PERMISSION
