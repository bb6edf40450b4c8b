"""What GPM measured on a real H200, as snapshots for the fake NVML to answer with (the
``h200-train`` scenario).

``snapshots/h200-gpm.json`` (recorded on a real H200 for gputop, see ``snapshots/README.md``)
holds one-second windows of GPM metrics beside ``nvmlDeviceGetUtilizationRates``, under a
bf16 matrix-product load and idle, and the CPU price of each NVML call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fakes.nvml_scenarios import GIB, MIB, gpu_sample, snapshot
from gputop.model import Activity, GpuSample, Memory, Snapshot, Utilization

DATA = Path(__file__).resolve().parents[2] / "snapshots" / "h200-gpm.json"


def recording() -> dict[str, Any]:
    """The whole recording."""
    loaded: dict[str, Any] = json.loads(DATA.read_text())
    return loaded


@dataclass(frozen=True, slots=True)
class Window:
    """One second of the H200: NVML's utilization, GPM's activity, the power it drew."""

    utilization: float
    memory_utilization: float
    activity: Activity
    power: float


def _window(raw: dict[str, Any]) -> Window:
    return Window(
        utilization=float(raw["util_gpu"]),
        memory_utilization=float(raw["util_mem"]),
        activity=Activity(
            graphics=raw["GRAPHICS_UTIL"],
            sm=raw["SM_UTIL"],
            sm_occupancy=raw["SM_OCCUPANCY"],
            tensor=raw["ANY_TENSOR_UTIL"],
            dram=raw["DRAM_BW_UTIL"],
            pcie_tx=raw["PCIE_TX_PER_SEC"] * MIB,
            pcie_rx=raw["PCIE_RX_PER_SEC"] * MIB,
            nvlink_tx=raw["NVLINK_TOTAL_TX_PER_SEC"] * MIB,
            nvlink_rx=raw["NVLINK_TOTAL_RX_PER_SEC"] * MIB,
        ),
        power=float(raw["power_w"]),
    )


def loaded_windows() -> list[Window]:
    """The 14 windows under the training-like load (8 s busy, 4 s idle, repeated)."""
    return [_window(raw) for raw in recording()["gpm_under_load"]["windows"]]


def idle_windows() -> list[Window]:
    """The 3 windows before the load."""
    return [_window(raw) for raw in recording()["gpm_idle"]["windows"]]


def h200_gpu(window: Window, index: int = 0) -> GpuSample:
    """An H200 (MIG off) reporting ``window``."""
    return gpu_sample(
        index,
        name="NVIDIA H200",
        architecture="Hopper",
        utilization=Utilization(
            gpu=window.utilization, memory=window.memory_utilization, encoder=0.0, decoder=0.0
        ),
        activity=window.activity,
        memory=Memory(total=143771 * MIB, used=31 * GIB, free=110 * GIB, reserved=2 * GIB),
        power=replace(
            gpu_sample().power,
            draw=window.power,
            limit=700.0,
            default_limit=700.0,
            max_limit=700.0,
        ),
    )


def without_activity(gpu: GpuSample) -> GpuSample:
    """The same GPU with no GPM (an Ampere or older part)."""
    return replace(gpu, activity=Activity(), architecture="Ampere")


def h200_ticks(windows: list[Window] | None = None) -> list[Snapshot]:
    """One snapshot per window, a second apart: what the fake answers tick by tick."""
    chosen = loaded_windows() if windows is None else windows
    ticks = []
    for number, window in enumerate(chosen):
        one = snapshot(h200_gpu(window))
        stamp = one.timestamp
        assert stamp is not None
        ticks.append(replace(one, timestamp=stamp.replace(second=number % 60)))
    return ticks


def price_us(call: str) -> float:
    """The median CPU microseconds one call cost on the H200 (``single_calls_under_load``
    and the GPM windows), for the benchmarks' arithmetic."""
    data = recording()
    if call == "nvmlGpmMetricsGet":
        costs = [w["metrics_get_us"] for w in data["gpm_under_load"]["windows"]]
        costs += [w["metrics_get_us"] for w in data["gpm_idle"]["windows"]]
        costs.sort()
        return float(costs[len(costs) // 2])
    if call == "nvmlGpmSampleGet":
        return float(data["gpm_under_load"]["sample_get_cost"]["cpu_median_us"])
    raise KeyError(call)
