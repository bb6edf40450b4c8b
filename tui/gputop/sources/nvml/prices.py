"""What each NVML call costs, and so how often the sampler makes it: the one price table.

Fakes answer any call in microseconds; a real driver does not. On a real H200 (driver
580.159.04, recorded for gputop: ``snapshots/nvml-prices-h200.tsv``, made from
``h200-live/nvml-costs-and-gpm.json``) the total energy counter costs 3.1-5.2 ms of CPU a
call, per-process utilization 2 ms, GPM metrics 1-1.9 ms, PCIe throughput 21 ms of wall time,
MIG mode 0.1-0.4 ms, BAR1 and ECC mode a quarter of a millisecond, where utilization, power,
temperature and clocks take 2-30 us. So a call is made as often as what it reads changes and
something wants it, never more (:class:`Cadence`):

* cheap values that move: every tick;
* values that never change: once; values that rarely change (modes, limits, BAR1, ECC
  counters, the MIG layout): on the slow cadence (``device.SLOW_REFRESH``), and at once when
  a failing call says the layout changed;
* the energy counter: its own cadence (:data:`ENERGY_REFRESH`) everywhere; it is a counter,
  so a reading a few seconds old loses nothing, and a scrape every 15 s is the common case
  (:data:`ENERGY_UNSHOWN_REFRESH` where nothing shows or writes it);
* per-process utilization and MIG activity (GPM metrics): only while some view shows or some
  sink writes them (``pipeline.in_view.InView``); per-process utilization every
  :data:`PROCESS_UTILIZATION_REFRESH` seconds then, as nvitop reads it, and MIG activity
  on the source's GPM cadence (``sources/nvml/gpm.GpmCadence``: within a CPU budget for a
  view, every 15 s for ``gputop export``, ``cli/live.EXPORT_GPM_EVERY``);
* PCIe throughput (20 ms of wall time a call): never on a thread a tick waits for; the
  sampler does not read it.

A call the sampler makes has a row here (``tests/unit/test_nvml_prices.py`` checks that each
call of a tick is priced and made no more often than its cadence says). A new call gets its
row with its figure (or ``None``: no figure yet) and the cadence its price allows.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Cadence(enum.Enum):
    """How often the sampler makes a call."""

    TICK = "every tick"
    ONCE = "once (static), or once per new PID or MIG layout"
    SLOW = "slow cadence (every few seconds), at once when the layout is seen to change"
    ENERGY = "the energy counter's own cadence"
    WANTED = "while a view shows or a sink writes what it reads, else never"
    NEVER_WAITED = "never on a thread a tick waits for (not read by the sampler)"


SM_UTILIZATION = "processes.sm_utilization"
"""Per-process SM utilization (``nvmlDeviceGetProcessUtilization``, 2 ms a call)."""

MIG_ACTIVITY = "mig_devices.utilization"
"""MIG instances' activity (``nvmlGpmMetricsGet``, 1-2 ms a GPU instance a tick)."""

WANTED_FIELDS = frozenset({SM_UTILIZATION, MIG_ACTIVITY})
"""What is read only while something of the run shows or writes it (cadence ``WANTED``)."""

PROCESS_UTILIZATION_REFRESH = 2.0
"""Seconds between reads of per-process utilization while it is wanted (2 ms a GPU): nvitop's
cadence for its process list, and NVML keeps the samples of the seconds between."""

ENERGY_REFRESH = 10.0
"""Seconds between reads of the total energy counter (5 ms of CPU a call on an H200)."""

ENERGY_UNSHOWN_REFRESH = 60.0
"""The same while nothing of the run shows or writes it (only ``gputop export`` does: the TUI,
``--json``, ``--record`` and ``--log`` have no energy counter): read now and then, so that it
is never left empty."""

CHEAP_US = 50.0
"""A call that costs more CPU than this (median, microseconds) is not made every tick."""


@dataclass(frozen=True, slots=True)
class Price:
    """What one call cost on the real H200, and when the sampler makes it.

    Attributes:
        cpu_us: median CPU microseconds per call on the calling thread; None: no figure.
        wall_us: median wall microseconds, where it differs much from the CPU time.
        cadence: how often the sampler makes the call.
        note: where the figure comes from, or why the cadence.
    """

    cpu_us: float | None
    cadence: Cadence
    wall_us: float | None = None
    note: str = ""


_TICK = Cadence.TICK
_ONCE = Cadence.ONCE
_SLOW = Cadence.SLOW

PRICES: dict[str, Price] = {
    # The costly ones, each on a cadence of its own.
    "nvmlDeviceGetTotalEnergyConsumption": Price(
        4983.3, Cadence.ENERGY, 5247.0, "3.1-5.2 ms, worst 16 ms: a counter, read every 10 s"
    ),
    "nvmlDeviceGetProcessUtilization": Price(
        2030.6, Cadence.WANTED, note="2 ms: every 2 s while SM % is shown or written"
    ),
    "nvmlGpmMetricsGet": Price(
        1389.9, Cadence.WANTED, note="1.0-1.9 ms (12 metrics), worst 5 ms: on GPM's cadence"
    ),
    "nvmlDeviceGetPcieThroughput": Price(
        792.3, Cadence.NEVER_WAITED, 20863.4, "20.9 ms of wall time: not read"
    ),
    "nvmlDeviceGetMigMode": Price(415.7, _SLOW, note="0.1-0.4 ms; changes only with a GPU reset"),
    "nvmlDeviceGetBAR1MemoryInfo": Price(263.9, _SLOW),
    "nvmlDeviceGetEccMode": Price(239.6, _SLOW),
    "nvmlDeviceGetPersistenceMode": Price(23.6, _SLOW),
    "nvmlDeviceGetEnforcedPowerLimit": Price(9.8, _SLOW),
    "nvmlDeviceGetComputeMode": Price(9.1, _SLOW),
    "nvmlDeviceGetTotalEccErrors": Price(6.1, _SLOW, note="counts of rare events"),
    "nvmlDeviceGetRemappedRows": Price(None, _SLOW, note="counts of rare events, with the ECC"),
    # Cheap and moving: every tick.
    "nvmlDeviceGetComputeRunningProcesses_v3": Price(43.6, _TICK, note="worst 376 us"),
    "nvmlDeviceGetGraphicsRunningProcesses_v3": Price(None, _TICK, note="as the compute list"),
    "nvmlDeviceGetMPSComputeRunningProcesses_v3": Price(None, _TICK, note="as the compute list"),
    "nvmlGpmMigSampleGet": Price(None, Cadence.WANTED, note="as nvmlGpmSampleGet, 35-47 us"),
    "nvmlGpmSampleGet": Price(46.9, _TICK, note="35-47 us; GPM, one sample a GPU a tick"),
    "nvmlDeviceGetFieldValues": Price(30.3, _TICK, note="memory temperature"),
    "nvmlDeviceGetMemoryInfo_v2": Price(28.1, _TICK),
    "nvmlDeviceGetPerformanceState": Price(16.4, _TICK),
    "nvmlDeviceGetUtilizationRates": Price(14.6, _TICK, note="2.4 us alone under load"),
    "nvmlDeviceGetPowerUsage": Price(8.2, _TICK),
    "nvmlDeviceGetTemperature": Price(7.9, _TICK),
    "nvmlDeviceGetEncoderUtilization": Price(7.2, _TICK),
    "nvmlDeviceGetCurrentClocksEventReasons": Price(6.9, _TICK),
    "nvmlDeviceGetDecoderUtilization": Price(4.8, _TICK),
    "nvmlDeviceGetClockInfo": Price(4.7, _TICK),
    "nvmlDeviceGetFanSpeed": Price(None, _TICK),
    "nvmlDeviceGetCurrentClocksThrottleReasons": Price(None, _TICK, note="older drivers"),
    # Identity, bounds and the MIG layout: once, or on the slow cadence.
    "nvmlDeviceGetHandleByIndex_v2": Price(None, _ONCE),
    "nvmlDeviceGetName": Price(None, _ONCE),
    "nvmlDeviceGetUUID": Price(None, _ONCE, note="a MIG device's: slow, with its layout"),
    "nvmlDeviceGetSerial": Price(None, _ONCE),
    "nvmlDeviceGetPciInfo_v3": Price(None, _ONCE),
    "nvmlDeviceGetArchitecture": Price(None, _ONCE),
    "nvmlDeviceGetTemperatureThreshold": Price(None, _ONCE),
    "nvmlDeviceGetPowerManagementDefaultLimit": Price(None, _ONCE),
    "nvmlDeviceGetPowerManagementLimitConstraints": Price(None, _ONCE),
    "nvmlDeviceGetMaxClockInfo": Price(None, _ONCE),
    "nvmlSystemGetProcessName": Price(None, _ONCE, note="once per PID"),
    "nvmlDeviceGetMaxMigDeviceCount": Price(None, _ONCE),
    "nvmlGpmQueryDeviceSupport": Price(None, _ONCE),
    "nvmlGpmSampleAlloc": Price(None, _ONCE, note="two buffers per GPU instance"),
    "nvmlDeviceGetMigDeviceHandleByIndex": Price(None, _SLOW, note="the MIG layout"),
    "nvmlDeviceGetGpuInstanceId": Price(None, _SLOW, note="the MIG layout"),
    "nvmlDeviceGetComputeInstanceId": Price(None, _SLOW, note="the MIG layout"),
    "nvmlDeviceGetAttributes_v2": Price(None, _SLOW, note="the MIG layout"),
    "nvmlDeviceGetGpuInstanceById": Price(None, _ONCE, note="per MIG layout"),
    "nvmlGpuInstanceGetInfo": Price(None, _ONCE, note="per MIG layout"),
    "nvmlDeviceGetGpuInstanceProfileInfoV": Price(None, _ONCE, note="per MIG layout"),
}
"""Per NVML C function (the name a driver exports, as the fakes see it): its price."""
