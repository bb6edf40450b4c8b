"""What a GPU is doing: busy, waiting, idle, throttled or unknown, defined once for every view.

The panel's finding, the history screen, the diagnosis, ``report``, ``--json``, the
exporter's ``gputop_gpu_state`` and the fleet view of ``cluster`` all take their state from
:func:`judge` (through :func:`sample_verdict` for one sample), so a run reads the same
whichever of them shows it.

* **busy**: utilization at or above ``low_utilization_pct``. A busy GPU at its power cap
  stays busy: a training job on a datacenter GPU runs at its power limit (an H200 draws
  690-708 W of 700 W with ``sw_power_cap`` active in nearly every busy second), and that is
  the GPU doing its work. Whether it was at the cap is a fact beside the state
  (:attr:`Verdict.at_power_cap`), not a state of its own.
* **waiting**: work is loaded (a compute process, or memory held) but utilization is low:
  the job holds the GPU and waits for its CPU, disk or network.
* **idle**: nothing loaded and utilization near 0.
* **throttled**: a limit that is a problem holds the clocks down: heat (``sw_thermal``,
  ``hw_thermal``), a hardware slowdown, the power brake, or the power cap while utilization
  is low (with the draw at the limit: the cap, not the work, is what holds the GPU back).
  It wins over the others.
* **unknown**: lost, or too little reported to tell (MIG with processes reports no
  utilization).

``utilization`` is the one input that says how hard the GPU works: :func:`activity` reads
it from a sample. A source that knows engine activity (GPM) can be preferred there, and
every view follows.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from gputop.model.activity import load_percent
from gputop.model.sample import GpuSample, ProcessSample, Reason
from gputop.model.throttle import ThrottleKind, ThrottleReason


class GpuState(str, enum.Enum):
    """What a GPU was doing (in one sample, or over a window)."""

    BUSY = "busy"
    """Utilization at or above ``low_utilization_pct``, at the power cap or not."""
    WAITING = "waiting"
    """Work is loaded (a compute process, or memory held) but utilization is low."""
    IDLE = "idle"
    """Nothing loaded and utilization near 0."""
    THROTTLED = "throttled"
    """A limit that is a problem holds the clocks down: heat, a hardware slowdown, the power
    brake, or the power cap at low utilization (wins over the others)."""
    UNKNOWN = "unknown"
    """Lost, missing, or not enough reported to tell (e.g. MIG with processes)."""


class StateThresholds(Protocol):
    """The numbers a state is judged by (``DiagnosisThresholds`` is one)."""

    @property
    def low_utilization_pct(self) -> float: ...

    @property
    def idle_utilization_pct(self) -> float: ...

    @property
    def held_memory_bytes(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The default numbers (what ``DiagnosisThresholds`` starts from)."""

    low_utilization_pct: float = 30.0
    """A GPU holding work below this utilization is waiting rather than busy."""
    idle_utilization_pct: float = 5.0
    """At or above this utilization something runs, even when no process is listed."""
    held_memory_bytes: int = 1024**3
    """Memory in use that counts as work loaded when no process is listed (containers often
    cannot see the processes, but the memory they hold still shows)."""


DEFAULT_THRESHOLDS = Thresholds()

POWER_CAP_DRAW_FRACTION = 0.9
"""The power cap holds a GPU back only where it draws at least this share of its limit. The
reason outlasts the load by a second or so (NVML averages power over a window): a GPU that
just finished its work still reports ``sw_power_cap`` at 0% utilization and half its limit,
and that is not a GPU held back."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A state, and whether the GPU was at its power cap in it."""

    state: GpuState
    at_power_cap: bool = False
    """The driver reported the power cap (``sw_power_cap``): for a busy GPU, the share of
    its busy time at the cap is reported beside the state."""


_VERDICTS = {
    (state, capped): Verdict(state, capped) for state in GpuState for capped in (False, True)
}


@lru_cache(maxsize=512)
def limits(reasons: tuple[str, ...]) -> tuple[bool, bool]:
    """(a limit that is a problem whatever the load, the power cap) among ``reasons``.

    A problem: heat, a hardware slowdown, the power brake. Benign reasons (idle, application
    or display clocks, sync boost) and names nvidia-smi does not have are neither.
    """
    problem = capped = False
    for name in reasons:
        reason = ThrottleReason.parse(name)
        if reason is None:
            continue
        if reason is ThrottleReason.SW_POWER_CAP:
            capped = True
        elif reason.kind in (ThrottleKind.THERMAL, ThrottleKind.HARDWARE) or (
            reason is ThrottleReason.HW_POWER_BRAKE_SLOWDOWN
        ):
            problem = True
    return problem, capped


def cap_binds(draw: float | None, limit: float | None) -> bool:
    """Whether a reported power cap holds the GPU at this draw: at
    ``POWER_CAP_DRAW_FRACTION`` of the limit or more, or either unknown (the driver's word
    is then all there is)."""
    if draw is None or not limit:
        return True
    return draw >= POWER_CAP_DRAW_FRACTION * limit


def judge(
    utilization: float | None,
    held: bool | None,
    reasons: tuple[str, ...] | None,
    *,
    binds: bool = True,
    thresholds: StateThresholds = DEFAULT_THRESHOLDS,
) -> Verdict:
    """The state from what decides it; the one classifier every view uses.

    Args:
        utilization: how hard the GPU works, in % (a sample's, or a window's mean); None
            when not reported.
        held: work is loaded (a compute process, memory held, kernels running); None when
            nothing reported lets one tell.
        reasons: the active clock-event reasons; None when not reported.
        binds: the draw confirms a reported power cap (:func:`cap_binds`).
        thresholds: the numbers it is judged by.
    """
    problem = capped = False
    if reasons:
        problem, capped = limits(reasons if type(reasons) is tuple else tuple(reasons))
    busy = utilization is not None and utilization >= thresholds.low_utilization_pct
    if problem or (capped and binds and utilization is not None and not busy):
        return _VERDICTS[(GpuState.THROTTLED, capped)]
    if busy:
        return _VERDICTS[(GpuState.BUSY, capped)]
    if held is None:
        state = GpuState.UNKNOWN
    elif not held:
        state = GpuState.IDLE
    else:
        # Work loaded, utilization unknown (MIG): could be anything.
        state = GpuState.UNKNOWN if utilization is None else GpuState.WAITING
    return _VERDICTS[(state, capped)]


# -- one sample ---------------------------------------------------------------------------


def activity(gpu: GpuSample) -> float | None:
    """How hard the GPU works, in %: what every state is judged by. GPM's engine activity
    where a source measured it, else utilization (:mod:`gputop.model.activity`)."""
    return load_percent(gpu)


def compute_processes(gpu: GpuSample) -> tuple[ProcessSample, ...]:
    """Processes that can do work on the GPU; graphics-only ones (a desktop) do not count."""
    return tuple(p for p in gpu.processes if p.type is None or "C" in p.type.upper())


def holds_work(gpu: GpuSample, thresholds: StateThresholds = DEFAULT_THRESHOLDS) -> bool | None:
    """Whether work is loaded on the GPU: a compute process, memory held, or kernels running.

    None when nothing reported lets us tell (no process list, no memory, no utilization).
    """
    if any(p.type is None or "C" in p.type.upper() for p in gpu.processes):
        return True
    util = activity(gpu)
    if util is not None and util >= thresholds.idle_utilization_pct:
        return True
    if not gpu.processes:
        used = gpu.memory.used
        if used is not None and used >= thresholds.held_memory_bytes:
            return True
        if used is None and (util is None or gpu.reason("memory.used") is Reason.NOT_IN_LOG):
            # A log without memory (`--query-gpu=utilization.gpu`) nor processes: a GPU at
            # 0% may hold a stalled job's memory or nothing at all.
            return None
    return False


def sample_verdict(
    gpu: GpuSample | None, thresholds: StateThresholds = DEFAULT_THRESHOLDS
) -> Verdict:
    """The verdict on one sample of a GPU (None: the GPU is missing from that snapshot)."""
    if gpu is None or gpu.lost:
        return _VERDICTS[(GpuState.UNKNOWN, False)]
    reasons = gpu.throttle_reasons
    power = gpu.power
    return judge(
        activity(gpu),
        holds_work(gpu, thresholds),
        reasons,
        binds=cap_binds(power.draw, power.limit) if reasons else True,
        thresholds=thresholds,
    )


def sample_state(
    gpu: GpuSample | None, thresholds: StateThresholds = DEFAULT_THRESHOLDS
) -> GpuState:
    """The state of one sample of a GPU (None: missing from that snapshot)."""
    return sample_verdict(gpu, thresholds).state


def power_holds_back(gpu: GpuSample, thresholds: StateThresholds = DEFAULT_THRESHOLDS) -> bool:
    """Whether power is what makes this sample throttled: the brake, or the cap at low
    utilization (a busy GPU at its cap is not held back; its panel says so as a fact)."""
    reasons = gpu.throttle_reasons
    if not reasons or gpu.lost:
        return False
    names = reasons if type(reasons) is tuple else tuple(reasons)
    if any(ThrottleReason.parse(n) is ThrottleReason.HW_POWER_BRAKE_SLOWDOWN for n in names):
        return True
    _problem, capped = limits(names)
    if not capped:
        return False
    util = activity(gpu)
    return (
        util is not None
        and util < thresholds.low_utilization_pct
        and cap_binds(gpu.power.draw, gpu.power.limit)
    )
