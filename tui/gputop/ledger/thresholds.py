"""What counts as idle, held and waiting: flags with documented defaults and their sources.

Every step of every GPU falls in one state (see ``README.md``, "The ledger"):

- **unknown**: no sample in the step (a gap, a stale exporter), or the GPU was idle and
  nothing says whether anything held it (no memory, process or pod data);
- **free** (idle and free): activity at or under ``idle_pct``, no pod, no process, memory
  under ``held_memory_mib``;
- **idle while held**: held (a pod, a process, or memory at or over ``held_memory_mib``)
  and activity at or under ``idle_pct`` (and power under ``power_floor_w`` when set);
- **waiting**: held, activity over ``idle_pct`` but under ``busy_pct``;
- **working**: held and at or over ``busy_pct``; or any activity over ``idle_pct``.

**Allocated** is every held step (idle, waiting and working); **active** is the activity
itself summed over time (a GPU at 50 % for two hours is one active GPU-hour).
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.sources.prometheus import window

IDLE_PCT = 1.0
"""gpu-pruner (github.com/wseaton/gpu-pruner) culls a pod whose GPUs'
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` stayed under 0.01 (1 %); Princeton's jobstats
(github.com/PrincetonUniversity/jobstats) flags a job whose GPU utilization was 0 % for its
whole run: ``--idle-at-most 0``."""

BUSY_PCT = window.LOW_UTILIZATION_PCT
"""At or over this a held GPU works; under it (and over idle) it waits: the fleet view's
busy threshold (``sources/prometheus/window.py``, kept equal to the diagnosis's)."""

HELD_MEMORY_MIB = window.HELD_MEMORY_BYTES / (1024 * 1024)
"""Memory in use that counts as a job holding the GPU (the fleet view's and diagnosis's)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The ledger's thresholds (``gputop report --prometheus`` flags)."""

    idle_pct: float = IDLE_PCT
    """``--idle-at-most``: activity (engine activity, else utilization) in percent at or
    under which a step is idle; 0 means exactly 0 % (jobstats)."""
    busy_pct: float = BUSY_PCT
    """``--busy-from``: held steps under this (and over idle) are waiting."""
    held_memory_mib: float = HELD_MEMORY_MIB
    """``--held-memory``: MiB in use that say a job holds the GPU."""
    power_floor_w: float | None = None
    """``--power-floor``: a step drawing at least this many watts is not idle whatever its
    activity (gpu-pruner's power floor); None: power is not asked."""
