"""Injected NVML failures: reasons, memoization, fallbacks, lost and hung GPUs."""

from __future__ import annotations

import time
from dataclasses import replace

import pynvml  # noqa: TID251 -- NVML return codes for the injected failures
import pytest

from fakes.nvml_fake import FakeNvml, Faults
from fakes.nvml_harness import nvml_source
from fakes.nvml_install import installed
from fakes.nvml_scenarios import GIB, MIB, gpu_sample, snapshot
from gputop.model import GpuSample, Memory, ProcessSample, Reason, Temperature
from gputop.sources.nvml.gpm import ACTIVITY_PATHS

NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
NO_PERMISSION = pynvml.NVML_ERROR_NO_PERMISSION


@pytest.mark.parametrize(
    ("function", "paths"),
    [
        ("nvmlDeviceGetUtilizationRates", ("utilization.gpu", "utilization.memory")),
        ("nvmlDeviceGetEncoderUtilization", ("utilization.encoder",)),
        ("nvmlDeviceGetPowerUsage", ("power.draw",)),
        ("nvmlDeviceGetEnforcedPowerLimit", ("power.limit",)),
        ("nvmlDeviceGetPowerManagementLimitConstraints", ("power.min_limit", "power.max_limit")),
        ("nvmlDeviceGetFanSpeed", ("fan_speed",)),
        ("nvmlDeviceGetTemperature", ("temperature.gpu",)),
        ("nvmlDeviceGetBAR1MemoryInfo", ("bar1.total", "bar1.used", "bar1.free")),
        ("nvmlDeviceGetSerial", ("serial",)),
        ("nvmlDeviceGetEccMode", ("ecc_mode",)),
        ("nvmlDeviceGetPerformanceState", ("performance_state",)),
    ],
)
@pytest.mark.parametrize("code", [NOT_SUPPORTED, NO_PERMISSION, pynvml.NVML_ERROR_UNKNOWN])
def test_a_failing_call_costs_only_its_own_fields(
    function: str, paths: tuple[str, ...], code: int
) -> None:
    expected = {
        NOT_SUPPORTED: Reason.NOT_SUPPORTED,
        NO_PERMISSION: Reason.NO_PERMISSION,
        pynvml.NVML_ERROR_UNKNOWN: Reason.ERROR,
    }[code]
    got = _poll_one(Faults(errors={(0, function): code}))
    for path in paths:
        assert got.reason(path) is expected, path
    missing = {path for path, _ in got.unavailable}
    # The card has no HBM (memory temperature) and no GPM (activity): not a Hopper.
    assert missing == {*paths, "temperature.memory", *ACTIVITY_PATHS}
    # Everything else was still read.
    assert got.name == "NVIDIA RTX A6000"
    assert got.clocks.graphics == 1740
    assert len(got.processes) == 3


def _poll_one(faults: Faults) -> GpuSample:
    with nvml_source(FakeNvml(snapshot(gpu_sample(0)), faults)) as source:
        return source.poll().gpus[0]


def test_none_in_the_snapshot_is_not_supported() -> None:
    want = gpu_sample(
        0,
        fan_speed=None,
        temperature=Temperature(gpu=50.0),
        memory=Memory(total=8 * GIB, used=GIB, free=7 * GIB),
    )
    fake = FakeNvml(snapshot(want))
    with nvml_source(fake) as source:
        got = source.poll().gpus[0]
    assert got.fan_speed is None and got.reason("fan_speed") is Reason.NOT_SUPPORTED
    for path in ("temperature.slowdown", "temperature.shutdown", "temperature.max_operating"):
        assert got.reason(path) is Reason.NOT_SUPPORTED
    assert got.memory == Memory(total=8 * GIB, used=GIB, free=7 * GIB)
    assert got.reason("memory.reserved") is Reason.NOT_SUPPORTED


@pytest.mark.parametrize(
    "code", [NOT_SUPPORTED, NO_PERMISSION, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND]
)
def test_refused_calls_are_never_repeated(code: int) -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)), Faults(errors={(0, "nvmlDeviceGetFanSpeed"): code}))
    with nvml_source(fake) as source:
        first = source.poll().gpus[0]
        mark = fake.mark()
        second = source.poll().gpus[0]
        third = source.poll().gpus[0]
    assert fake.counts_since(mark)["nvmlDeviceGetFanSpeed"] == 0
    assert fake.counts_since(mark)["nvmlDeviceGetPowerUsage"] == 2
    # The reason stays on every later sample.
    assert first.reason("fan_speed") is second.reason("fan_speed") is third.reason("fan_speed")


def test_transient_errors_are_retried() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0)),
        Faults(errors={(0, "nvmlDeviceGetFanSpeed"): pynvml.NVML_ERROR_UNKNOWN}),
    )
    with nvml_source(fake) as source:
        first = source.poll().gpus[0]
        del fake.faults.errors[(0, "nvmlDeviceGetFanSpeed")]
        second = source.poll().gpus[0]
    assert first.reason("fan_speed") is Reason.ERROR and first.fan_speed is None
    assert second.fan_speed == 64.0 and second.reason("fan_speed") is None


def test_missing_entry_points_are_not_supported() -> None:
    got = _poll_one(Faults(missing={"nvmlDeviceGetArchitecture", "nvmlDeviceGetSerial"}))
    assert got.architecture is None and got.reason("architecture") is Reason.NOT_SUPPORTED
    assert got.serial is None and got.reason("serial") is Reason.NOT_SUPPORTED


def test_static_values_are_read_once() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with nvml_source(fake) as source:
        source.poll()
        mark = fake.mark()
        got = source.poll().gpus[0]
    counts = fake.counts_since(mark)
    for name in (
        "nvmlDeviceGetName",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetPciInfo_v3",
        "nvmlDeviceGetMaxClockInfo",
        "nvmlDeviceGetTemperatureThreshold",
        "nvmlDeviceGetPowerManagementDefaultLimit",
        "nvmlDeviceGetHandleByIndex_v2",
    ):
        assert counts[name] == 0, name
    assert got.name == "NVIDIA RTX A6000"
    assert got.max_clocks.memory == 8001
    assert got.temperature.shutdown == 98.0


# ----- versioned fallbacks --------------------------------------------------------------------


def test_process_lists_fall_back_from_v3_to_v2() -> None:
    missing = {
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetGraphicsRunningProcesses_v3",
        "nvmlDeviceGetMPSComputeRunningProcesses_v3",
    }
    fake = FakeNvml(snapshot(gpu_sample(0)), Faults(missing=missing))
    with nvml_source(fake) as source:
        first = source.poll().gpus[0]
        mark = fake.mark()
        second = source.poll().gpus[0]
    assert {p.pid: p.type for p in first.processes} == {4242: "C", 1717: "G", 1818: "C+G"}
    assert second.processes == first.processes
    counts = fake.counts_since(mark)
    # Into the array the first tick sized: one call a tick.
    assert counts["nvmlDeviceGetComputeRunningProcesses_v2"] == 1
    assert "nvmlDeviceGetComputeRunningProcesses_v3" not in counts


def test_process_lists_fall_back_to_v1() -> None:
    missing = {
        f"nvmlDevice{kind}RunningProcesses{version}"
        for kind in ("GetCompute", "GetGraphics", "GetMPSCompute")
        for version in ("_v3", "_v2")
    }
    want = gpu_sample(
        0,
        processes=(
            *gpu_sample(0).processes,
            replace(gpu_sample(0).processes[0], pid=77, memory_used=None),
        ),
    )
    fake = FakeNvml(snapshot(want), Faults(missing=missing))
    with nvml_source(fake) as source:
        got = source.poll().gpus[0]
    by_pid = {p.pid: p for p in got.processes}
    assert {pid: p.type for pid, p in by_pid.items()} == {
        4242: "C",
        77: "C",
        1717: "G",
        1818: "C+G",
    }
    assert by_pid[4242].memory_used == 20 * GIB
    assert by_pid[77].memory_used is None
    assert by_pid[1717].memory_used == 120 * MIB
    assert any(c.name == "nvmlDeviceGetComputeRunningProcesses" for c in fake.calls)


def test_no_process_list_at_all() -> None:
    missing = {
        f"nvmlDevice{kind}RunningProcesses{version}"
        for kind in ("GetCompute", "GetGraphics", "GetMPSCompute")
        for version in ("_v3", "_v2", "")
    }
    got = _poll_one(Faults(missing=missing))
    assert got.processes == ()
    assert got.reason("processes") is Reason.NOT_SUPPORTED


def test_process_list_permission_denied_does_not_fall_back() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0)),
        Faults(
            errors={
                (0, "nvmlDeviceGetComputeRunningProcesses_v3"): NO_PERMISSION,
                (0, "nvmlDeviceGetGraphicsRunningProcesses_v3"): NO_PERMISSION,
                (0, "nvmlDeviceGetMPSComputeRunningProcesses_v3"): NO_PERMISSION,
            }
        ),
    )
    with nvml_source(fake) as source:
        got = source.poll().gpus[0]
    assert got.reason("processes") is Reason.NO_PERMISSION
    assert not any("RunningProcesses_v2" in c.name for c in fake.calls)


def test_memory_info_falls_back_to_v1() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)), Faults(missing={"nvmlDeviceGetMemoryInfo_v2"}))
    with nvml_source(fake) as source:
        got = source.poll().gpus[0]
        mark = fake.mark()
        source.poll()
    # v1 counts the reserved GiB as used.
    assert got.memory == Memory(total=48 * GIB, used=31 * GIB, free=17 * GIB, reserved=None)
    assert got.reason("memory.reserved") is Reason.NOT_SUPPORTED
    assert fake.counts_since(mark)["nvmlDeviceGetMemoryInfo"] == 1


def test_throttle_reasons_fall_back_to_the_older_entry_point() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0, throttle_reasons=("gpu_idle",))),
        Faults(missing={"nvmlDeviceGetCurrentClocksEventReasons"}),
    )
    with nvml_source(fake) as source:
        got = source.poll().gpus[0]
    assert got.throttle_reasons == ("gpu_idle",)
    assert any(c.name == "nvmlDeviceGetCurrentClocksThrottleReasons" for c in fake.calls)


def test_memory_temperature_through_field_values() -> None:
    want = gpu_sample(0, temperature=Temperature(gpu=60.0, memory=72.0, slowdown=90.0))
    got = _poll_one_of(want)
    assert got.temperature.memory == 72.0
    assert got.reason("temperature.memory") is None


def _poll_one_of(want: GpuSample) -> GpuSample:
    with nvml_source(FakeNvml(snapshot(want))) as source:
        return source.poll().gpus[0]


# ----- lost GPUs --------------------------------------------------------------------------------


def test_gpu_lost_at_tick_n_while_others_go_on() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)), Faults(lose_at={1: 2}))
    with nvml_source(fake) as source:
        ticks = [source.poll() for _ in range(4)]
        mark = fake.mark()
        last = source.poll()
    assert [s.gpus[1].lost for s in ticks] == [False, False, True, True]
    assert not any(s.gpus[0].lost for s in ticks)
    lost = ticks[2].gpus[1]
    # What identifies the GPU stays; nothing else is claimed.
    assert lost.uuid == "GPU-1a2b3c4d-0000-4000-8000-000000000001"
    assert lost.name == "NVIDIA RTX A6000"
    assert lost.utilization.gpu is None and lost.processes == ()
    assert lost.reason("lost") is Reason.GPU_LOST
    # A lost GPU is not asked anything any more.
    assert all(call.gpu != 1 for call in fake.calls_since(mark))
    assert last.gpus[0].utilization.gpu == 87.0


def test_gpu_lost_before_the_first_tick() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)), Faults(lose_at={0: 0}))
    with nvml_source(fake) as source:
        got = source.poll()
    assert got.gpus[0].lost and got.gpus[0].index == 0
    assert not got.gpus[1].lost and got.gpus[1].name == "NVIDIA RTX A6000"


def test_unknown_error_on_the_handle_is_lost() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0), gpu_sample(1)),
        Faults(errors={(1, "nvmlDeviceGetHandleByIndex_v2"): pynvml.NVML_ERROR_UNKNOWN}),
    )
    with nvml_source(fake) as source:
        got = source.poll()
    assert got.gpus[1].lost
    assert not got.gpus[0].lost


def test_no_permission_on_the_handle_is_reported_not_lost() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0)),
        Faults(errors={(0, "nvmlDeviceGetHandleByIndex_v2"): NO_PERMISSION}),
    )
    with nvml_source(fake) as source:
        got = source.poll().gpus[0]
    assert not got.lost
    assert got.name is None and got.reason("name") is Reason.NO_PERMISSION


# ----- hung calls -----------------------------------------------------------------------------


def test_a_hung_call_makes_its_gpu_stale_within_the_deadline() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    # Bounds are wide (deadline 1 s, hang until released) so a loaded CI box cannot flip them.
    with nvml_source(fake, deadline=1.0) as source:
        first = source.poll()
        release = fake.hang(1, "nvmlDeviceGetPowerUsage")
        started = time.monotonic()
        second = source.poll()
        took = time.monotonic() - started
        third_started = time.monotonic()
        third = source.poll()
        third_took = time.monotonic() - third_started
        release.set()
        deadline = time.monotonic() + 5
        fourth = source.poll()
        while fourth.gpus[1].stale and time.monotonic() < deadline:
            time.sleep(0.01)
            fourth = source.poll()
    assert not first.gpus[1].stale
    assert 0.95 <= took < 4.0
    # The stale GPU shows its previous sample; the other one is fresh.
    assert second.gpus[1].stale and not second.gpus[0].stale
    assert replace(second.gpus[1], stale=False) == first.gpus[1]
    # The still-hung GPU is not waited on again, nor asked again.
    assert third.gpus[1].stale
    assert third_took < 0.9
    # Once the call returns, the GPU comes back.
    assert not fourth.gpus[1].stale and fourth.gpus[1].power.draw == 251.5


def test_a_worker_let_out_of_a_hung_call_calls_nothing_once_its_test_is_over() -> None:
    """A hung call is let go as its test ends (``installed``); the worker that made it then
    finishes its sample. That happens before pynvml is handed back: not in the fake of
    whatever runs next, which would count the calls as its own."""
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with nvml_source(fake, deadline=0.3) as source:
        source.poll()
        fake.hang(1, "nvmlDeviceGetPowerUsage")
        assert source.poll().gpus[1].stale  # its worker is inside the hung call
    after = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with installed(after):
        time.sleep(0.3)
        assert after.calls == []


def test_a_gpu_hung_from_the_start_is_stale_with_only_its_index() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    fake.hang(0, "nvmlDeviceGetHandleByIndex_v2", from_tick=0)
    with nvml_source(fake, deadline=0.2) as source:
        got = source.poll()
    assert got.gpus[0].stale and got.gpus[0].index == 0 and got.gpus[0].name is None
    assert got.gpus[1].name == "NVIDIA RTX A6000" and not got.gpus[1].stale


def test_a_slow_first_sample_keeps_the_gpus_uuid() -> None:
    """GPUTOP_FAKE_NVML_LATENCY=0,nvmlDeviceGetUtilizationRates=3: the first samples miss
    the deadline, yet each GPU is known by its UUID from the first tick on, so the views
    never see an index-only GPU that later "disappears"."""
    gpus = [gpu_sample(i) for i in range(4)]
    fake = FakeNvml(snapshot(*gpus), Faults(latency_by_name={"nvmlDeviceGetUtilizationRates": 1.5}))
    with nvml_source(fake, deadline=0.6) as source:
        polls = []
        for _ in range(6):  # every answer comes after its deadline
            polls.append(source.poll())
            time.sleep(0.4)
    assert all(gpu.stale for gpu in polls[0].gpus)
    assert len({gpu.uuid for gpu in gpus}) == 4
    for poll in polls:
        assert [gpu.uuid for gpu in poll.gpus] == [gpu.uuid for gpu in gpus]
        assert [gpu.name for gpu in poll.gpus] == [gpu.name for gpu in gpus]
    # The late answers are taken in: their readings show, still marked stale.
    assert all(gpu.utilization.gpu is not None for gpu in polls[-1].gpus)


def test_slow_calls_within_the_deadline_are_not_stale() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0)), Faults(latency_by_name={"nvmlDeviceGetFanSpeed": 0.05})
    )
    with nvml_source(fake, deadline=2.0) as source:
        got = source.poll().gpus[0]
    assert not got.stale and got.fan_speed == 64.0


def test_close_with_a_hung_call_does_not_block_or_shut_nvml_down() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    fake.hang(0, "nvmlDeviceGetFanSpeed", from_tick=0)
    with nvml_source(fake, deadline=0.1) as source:
        source.poll()
        started = time.monotonic()
        source.close()
        # The call hangs for ever; returning at all proves close did not wait on it.
        assert time.monotonic() - started < 3.0
        # NVML stays initialised under the hung thread (nvml_source's init is still held).
        assert fake.initialized == 1


def test_a_hung_name_query_stalls_only_the_gpu_that_made_it() -> None:
    shared = (ProcessSample(pid=1717, type="C", name="trainer", memory_used=GIB),)
    fake = FakeNvml(snapshot(gpu_sample(0, processes=shared), gpu_sample(1, processes=shared)))
    release = fake.hang(None, "nvmlSystemGetProcessName")
    with nvml_source(fake, deadline=0.5) as source:
        first = source.poll()
        second = source.poll()
        release.set()
        deadline = time.monotonic() + 5
        later = source.poll()
        while any(g.stale for g in later.gpus) and time.monotonic() < deadline:
            time.sleep(0.01)
            later = source.poll()
    # One thread asked and hung; the other waited briefly and went on without the name.
    assert sorted(g.stale for g in first.gpus) == [False, True]
    fresh = next(g for g in first.gpus if not g.stale)
    assert fresh.processes[0].pid == 1717 and fresh.processes[0].name is None
    assert sorted(g.stale for g in second.gpus) == [False, True]
    # Once the call returns, the name is known everywhere.
    assert [g.processes[0].name for g in later.gpus] == ["trainer", "trainer"]
