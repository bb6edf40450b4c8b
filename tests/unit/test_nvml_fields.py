"""NvmlSource maps every NVML value onto the model, through the real pynvml marshalling."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from fakes.nvml_fake import FakeNvml, Faults
from fakes.nvml_harness import nvml_source
from fakes.nvml_scenarios import GIB, MIB, gpu_sample, snapshot
from gputop.model import GpuSample, ProcessSample, Reason, Snapshot
from gputop.sources.nvml import device
from gputop.sources.nvml.gpm import ACTIVITY_PATHS


def _poll(snap: Snapshot, faults: Faults | None = None) -> Snapshot:
    with nvml_source(FakeNvml(snap, faults)) as source:
        return source.poll()


def _by_pid(processes: tuple[ProcessSample, ...]) -> dict[int, ProcessSample]:
    return {p.pid: p for p in processes}


def test_every_gpu_field_comes_through() -> None:
    want = gpu_sample(0)
    got = _poll(snapshot(want)).gpus[0]
    for f in fields(GpuSample):
        if f.name in ("processes", "unavailable"):
            continue
        assert getattr(got, f.name) == getattr(want, f.name), f.name
    # The card reports everything but GPM's activity (not a Hopper) and memory temperature
    # (not an HBM part).
    activity = tuple((path, Reason.NOT_SUPPORTED) for path in ACTIVITY_PATHS)
    assert got.unavailable == (*activity, ("temperature.memory", Reason.NOT_SUPPORTED))
    assert got.reason("temperature.memory") is Reason.NOT_SUPPORTED


def test_system_fields() -> None:
    got = _poll(snapshot(gpu_sample(0), gpu_sample(1), driver="535.54.03", cuda="12.2"))
    assert got.driver_version == "535.54.03"
    assert got.cuda_version == "12.2"
    assert got.attached_gpus == 2
    assert got.host == "testhost"
    assert [g.index for g in got.gpus] == [0, 1]
    assert got.timestamp is not None


def test_units_power_from_milliwatts_memory_in_bytes() -> None:
    want = gpu_sample(0)
    want = replace(want, power=replace(want.power, draw=67.03, limit=123.45), fan_speed=None)
    got = _poll(snapshot(want)).gpus[0]
    assert got.power.draw == 67.03
    assert got.power.limit == 123.45
    assert got.memory.total == 48 * GIB
    assert got.bar1.used == 9 * MIB
    assert got.fan_speed is None
    assert got.reason("fan_speed") is Reason.NOT_SUPPORTED


@pytest.mark.parametrize(
    "reasons",
    [
        (),
        ("gpu_idle",),
        ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown"),
        ("applications_clocks_setting", "sync_boost", "display_clocks_setting"),
        ("sw_power_cap", "hw_power_brake_slowdown"),
    ],
)
def test_throttle_reasons_decode_to_xml_names(reasons: tuple[str, ...]) -> None:
    got = _poll(snapshot(gpu_sample(0, throttle_reasons=reasons))).gpus[0]
    assert got.throttle_reasons == reasons


@pytest.mark.parametrize("mode", ["Default", "Exclusive_Process", "Prohibited"])
def test_compute_modes(mode: str) -> None:
    assert _poll(snapshot(gpu_sample(0, compute_mode=mode))).gpus[0].compute_mode == mode


@pytest.mark.parametrize("name", ["Kepler", "Pascal", "Turing", "Ampere", "Ada Lovelace", "Hopper"])
def test_architectures(name: str) -> None:
    assert _poll(snapshot(gpu_sample(0, architecture=name))).gpus[0].architecture == name


def test_modes_off() -> None:
    got = _poll(
        snapshot(gpu_sample(0, persistence_mode=False, ecc_mode=False, performance_state="P8"))
    ).gpus[0]
    assert got.persistence_mode is False
    assert got.ecc_mode is False
    assert got.performance_state == "P8"
    assert got.mig_mode is False


def test_compute_and_graphics_lists_merge_per_pid() -> None:
    got = _poll(snapshot(gpu_sample(0))).gpus[0]
    processes = _by_pid(got.processes)
    assert set(processes) == {4242, 1717, 1818}
    assert processes[4242].type == "C"
    assert processes[1717].type == "G"
    assert processes[1818].type == "C+G"
    assert processes[1818].memory_used == 2 * GIB
    assert processes[1717].name == "/usr/lib/xorg/Xorg"
    assert processes[4242].gpu_instance_id is None
    assert processes[4242].compute_instance_id is None


def test_mps_clients_are_compute() -> None:
    got = _poll(snapshot(gpu_sample(0)), Faults(mps_pids={4242})).gpus[0]
    assert _by_pid(got.processes)[4242].type == "C"
    assert _by_pid(got.processes)[4242].memory_used == 20 * GIB


def test_process_memory_unknown_on_wddm() -> None:
    want = gpu_sample(
        0,
        processes=(ProcessSample(pid=2320, type="C+G", name=None, memory_used=None),),
    )
    got = _poll(snapshot(want)).gpus[0]
    assert got.processes == (ProcessSample(pid=2320, type="C+G"),)


def test_per_process_sm_utilization() -> None:
    got = _poll(snapshot(gpu_sample(0))).gpus[0]
    processes = _by_pid(got.processes)
    assert processes[4242].sm_utilization == 80.0
    # No sample for the others: unknown, not 0.
    assert processes[1717].sm_utilization is None


@pytest.fixture
def utilization_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-process utilization read on every tick (its cadence is 2 s, and these ticks are
    not seconds apart): what each read asks NVML and makes of its answer."""
    monkeypatch.setattr(device, "PROCESS_UTILIZATION_REFRESH", 0.0)


@pytest.mark.usefixtures("utilization_every_tick")
def test_process_utilization_not_found_is_no_samples_not_an_error() -> None:
    quiet = gpu_sample(0, processes=(ProcessSample(pid=9, type="C", name="idle", memory_used=MIB),))
    fake = FakeNvml(snapshot(quiet))
    with nvml_source(fake) as source:
        first = source.poll().gpus[0]
        mark = fake.mark()
        second = source.poll().gpus[0]
    assert first.processes[0].sm_utilization is None
    assert first.unavailable == second.unavailable
    assert "processes.sm_utilization" not in dict(first.unavailable)
    # NotFound is not remembered as unsupported: asked again next tick.
    assert fake.counts_since(mark)["nvmlDeviceGetProcessUtilization"] == 1


@pytest.mark.usefixtures("utilization_every_tick")
def test_process_utilization_only_newer_samples() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with nvml_source(fake) as source:
        source.poll()
        mark = fake.mark()
        second = source.poll().gpus[0]
    asked = [c for c in fake.calls_since(mark) if c.name == "nvmlDeviceGetProcessUtilization"]
    # The last tick's newest sample (tick 0 stamps 1_000_000 us) is where tick 1 asks from.
    assert asked[0].key[-1] == 1_000_000
    assert _by_pid(second.processes)[4242].sm_utilization == 80.0


def test_process_names_asked_once_per_pid() -> None:
    # 1717 and 1818 run on both GPUs: one name query each, not one per GPU or per tick.
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with nvml_source(fake) as source:
        mark = fake.mark()
        source.poll()
        source.poll()
    asked = [c.key[0] for c in fake.calls_since(mark) if c.name == "nvmlSystemGetProcessName"]
    assert sorted(asked) == [1717, 1818, 4242, 4243]


def test_no_gpu_processes_means_no_process_utilization_call() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0, processes=())))
    with nvml_source(fake) as source:
        mark = fake.mark()
        got = source.poll().gpus[0]
    assert got.processes == ()
    assert fake.counts_since(mark)["nvmlDeviceGetProcessUtilization"] == 0


def test_enrich_adds_host_fields_to_every_copy_of_a_process() -> None:
    seen: list[tuple[int, ...]] = []

    def enrich(processes: tuple[ProcessSample, ...]) -> tuple[ProcessSample, ...]:
        seen.append(tuple(p.pid for p in processes))
        return tuple(
            replace(p, user="ada", command=f"cmd {p.pid}", cpu_percent=12.5, name="host-name")
            for p in processes
        )

    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with nvml_source(fake, enrich=enrich) as source:
        got = source.poll()
    # One call per tick with each PID once (1717 and 1818 are on both GPUs).
    assert len(seen) == 1
    assert sorted(seen[0]) == [1717, 1818, 4242, 4243]
    for gpu in got.gpus:
        for process in gpu.processes:
            assert process.user == "ada"
            assert process.command == f"cmd {process.pid}"
            assert process.cpu_percent == 12.5
            # The driver's name wins; the host's fills only a missing one.
            assert process.name != "host-name"
    # Driver facts stay per GPU.
    assert _by_pid(got.gpus[0].processes)[1818].type == "C+G"
    assert _by_pid(got.gpus[0].processes)[4242].memory_used == 20 * GIB


def test_the_energy_counter_in_joules_or_why_not() -> None:
    counted = _poll(snapshot(gpu_sample(0))).gpus[0]
    assert counted.power.energy == pytest.approx(8_765_432.1)  # NVML's mJ, as joules
    older = gpu_sample(0, power=replace(gpu_sample(0).power, energy=None))
    got = _poll(snapshot(older)).gpus[0]
    assert got.power.energy is None
    assert got.reason("power.energy") is Reason.NOT_SUPPORTED
