"""The same ledger from one machine's snapshots (a recording): ``gputop report FILE --by pod``.

Snapshots are put into steps of ``step`` seconds by their time; each GPU's step is judged as
Prometheus's are (``judge.py``): its mean activity (GPM's or NVML's
utilization), its mean memory in use, its processes, and its holders (the pods the kubelet
gave it, or its processes' pods). Groups: ``node`` (the snapshot's host), ``gpu-model``,
``pod``/``namespace`` (from holders and process owners), ``user`` (processes' users),
``job`` (a process's Slurm job). A recording whose snapshots carry no owner puts everything
under ``(none)`` for the owner groupings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timezone, tzinfo

from gputop.ledger.account import NO_GROUP, Cost, Ledger, Prices, StepCounts, account
from gputop.ledger.judge import file_step
from gputop.ledger.promql import GroupBy
from gputop.ledger.thresholds import Thresholds
from gputop.model import GpuSample, Snapshot

MIB = 1024 * 1024


@dataclass
class _Step:
    """One GPU's samples within one step."""

    group: str
    pod: bool
    activity: list[float] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)
    power: list[float] = field(default_factory=list)


def _owner_group(by: GroupBy, gpu: GpuSample) -> tuple[str, bool]:
    """The GPU's group under ``by``, and whether a pod holds it."""
    pods = [o for o in gpu.holders if o.pod]
    pods += [p.owner for p in gpu.processes if p.owner is not None and p.owner.pod]
    owner = pods[0] if pods else None
    if by is GroupBy.POD:
        if owner is None:
            return "", False
        return (f"{owner.namespace}/{owner.pod}" if owner.namespace else owner.pod or ""), True
    if by is GroupBy.NAMESPACE:
        return (owner.namespace or "") if owner else "", owner is not None
    if by is GroupBy.USER:
        users = sorted({p.user for p in gpu.processes if p.user})
        return (users[0] if users else ""), owner is not None
    if by is GroupBy.JOB:
        jobs = sorted({p.owner.slurm_job for p in gpu.processes if p.owner and p.owner.slurm_job})
        return (str(jobs[0]) if jobs else ""), owner is not None
    return gpu.name or "", owner is not None


def _mean(values: list[float] | list[int]) -> float | None:
    return sum(values) / len(values) if values else None


def _activity(gpu: GpuSample) -> float | None:
    value = gpu.utilization.gpu
    return None if value is None or not math.isfinite(value) else float(value)


def ledger_from_snapshots(
    snapshots: Iterable[Snapshot],
    by: GroupBy,
    step: float,
    thresholds: Thresholds,
    *,
    source: str,
    prices: Prices,
    tz: tzinfo = timezone.utc,
) -> Ledger:
    """The ledger of a recording's ``snapshots`` (one machine), in steps of ``step``."""
    steps: dict[tuple[float, str], _Step] = {}
    first = math.inf
    last = -math.inf
    for snapshot in snapshots:
        if snapshot.timestamp is None:
            continue
        at = snapshot.timestamp.timestamp()
        first = min(first, at)
        last = max(last, at)
        end = math.floor(at / step) * step + step  # the step whose window holds ``at``
        for gpu in snapshot.gpus:
            key = gpu.uuid or f"{snapshot.host}#{gpu.index}"
            if by is GroupBy.NODE:
                group, pod = snapshot.host or "", any(o.pod for o in gpu.holders)
            else:
                group, pod = _owner_group(by, gpu)
            one = steps.get((end, key))
            if one is None:
                one = steps[(end, key)] = _Step(group, pod)
            activity = _activity(gpu)
            if activity is not None:
                one.activity.append(activity)
            if gpu.memory.used is not None:
                one.memory.append(gpu.memory.used / MIB)
            if gpu.reason("processes") is None:
                one.processes.append(len(gpu.processes))
            if gpu.power.draw is not None:
                one.power.append(gpu.power.draw)
    if not steps:
        since = until = 0.0
    else:
        since = math.floor(first / step) * step
        until = math.floor(last / step) * step + step
    counts = StepCounts(step=step, since=since, until=until)
    for (end, _), one in steps.items():
        file_step(
            counts,
            thresholds,
            one.group or NO_GROUP,
            end,
            pod=one.pod,
            activity=_mean(one.activity),
            memory=_mean(one.memory),
            processes=_mean(one.processes),
            power=_mean(one.power),
        )
    return account(counts, by, thresholds, source=source, cost=Cost(), prices=prices, tz=tz)
