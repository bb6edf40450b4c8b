"""A week of GPU history whose ground truth is known, for the ledger's tests and benchmark.

:func:`week` builds a fleet (by default 64 GPUs on 8 nodes): dcgm-exporter nodes (pods in
``pod``/``namespace``/``container`` labels, engine activity on two of them) and ``gputop
export`` nodes (``gputop_processes``), with pods that hold and use, hold and idle, hold and
wait, come and go; a node that goes stale for an hour; an exporter restart (a gap); a node
without ``DCGM_FI_DEV_FB_USED`` (its idle GPUs are unknown). Every GPU's state changes only
on step boundaries, so the truth per step is exact: :meth:`History.truth` adds it up as the
ledger should. :func:`write_openmetrics` writes it for ``promtool tsdb
create-blocks-from openmetrics``; :func:`write_prometheus_text` for VictoriaMetrics's
``/api/v1/import/prometheus``. Both write the same samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO

DAY = 86400
HOUR = 3600
GIB_MIB = 1024


@dataclass(frozen=True, slots=True)
class State:
    """One GPU during one step."""

    util: float | None
    """Percent (None: no sample in the step, a gap)."""
    memory_mib: float | None
    power_w: float
    pod: tuple[str, str] | None = None
    """(namespace, pod)."""
    processes: int | None = None
    user: str | None = None
    """The user of the process on it (``gputop_process_memory_used_bytes{user}``)."""
    job: str | None = None
    """dcgm-exporter's ``hpc_job`` label (its HPC job mapping)."""


@dataclass
class Gpu:
    """One GPU's series labels and its state at each step."""

    node: str
    index: int
    model: str
    exporter: str
    """``dcgm`` or ``gputop``."""
    engine: bool = False
    """Its activity is DCGM_FI_PROF_GR_ENGINE_ACTIVE (not GPU_UTIL) in the ledger."""
    memory: bool = True
    """It reports DCGM_FI_DEV_FB_USED."""
    states: list[State] = field(default_factory=list)

    @property
    def uuid(self) -> str:
        return (
            f"GPU-{abs(hash((self.node, self.index))) % 10**8:08d}-ledger-{self.node}-{self.index}"
        )

    def labels(self, state: State) -> dict[str, str]:
        labels = {
            "gpu": str(self.index),
            "UUID": self.uuid,
            "device": f"nvidia{self.index}",
            "modelName": self.model,
            "Hostname": self.node,
            "instance": f"{self.node}:9400",
            "job": "dcgm-exporter" if self.exporter == "dcgm" else "gputop",
        }
        if state.job is not None:
            labels["hpc_job"] = state.job
        if state.pod is not None:
            labels["container"] = "main"
            labels["namespace"], labels["pod"] = state.pod
        return labels


@dataclass
class History:
    """The fleet over ``steps`` steps of ``step`` seconds from ``start``, sampled every
    ``interval`` seconds (samples sit inside steps, never on a boundary)."""

    start: float
    step: float
    interval: float
    steps: int
    gpus: list[Gpu]

    @property
    def end(self) -> float:
        return self.start + self.steps * self.step

    def series(self) -> Iterator[tuple[str, str, list[tuple[float, float]]]]:
        """(metric, its labels as text, [(seconds, value)]) of every series, family by
        family; samples in time order."""
        per_step = round(self.step / self.interval)
        offsets = [self.interval * (k + 0.5) for k in range(per_step)]
        families: list[tuple[str, Callable[[Gpu, State], float | None]]] = [
            # A GPU with engine activity reports utilization too (dcgm-exporter's default
            # counters, gputop's on Hopper), reading higher: the engine's is the one used.
            (
                "DCGM_FI_DEV_GPU_UTIL",
                lambda g, s: (
                    min(100.0, s.util + 7.0) if g.engine and s.util is not None else s.util
                ),
            ),
            (
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                lambda g, s: (s.util / 100.0) if g.engine and s.util is not None else None,
            ),
            ("DCGM_FI_DEV_FB_USED", lambda g, s: s.memory_mib if g.memory else None),
            ("DCGM_FI_DEV_POWER_USAGE", lambda g, s: s.power_w),
            (
                "gputop_processes",
                lambda g, s: (
                    float(s.processes)
                    if g.exporter == "gputop" and s.processes is not None
                    else None
                ),
            ),
        ]
        for metric, read in families:
            for gpu in self.gpus:
                # One series per label set: a pod that comes starts a series of its own.
                runs: dict[
                    tuple[tuple[str, str] | None, str | None], list[tuple[float, float]]
                ] = {}
                for index, state in enumerate(gpu.states):
                    if state.util is None:
                        continue
                    value = read(gpu, state)
                    if value is None:
                        continue
                    base = self.start + index * self.step
                    runs.setdefault((state.pod, state.job), []).extend(
                        (base + o, value) for o in offsets
                    )
                for (pod, job), points in runs.items():
                    labels = gpu.labels(State(0.0, None, 0.0, pod=pod, job=job))
                    yield metric, _labels(labels), points
        for gpu in self.gpus:
            users: dict[tuple[tuple[str, str] | None, str], list[tuple[float, float]]] = {}
            for index, state in enumerate(gpu.states):
                if state.util is None or state.user is None:
                    continue
                base = self.start + index * self.step
                value = (state.memory_mib or 0.0) * 1024 * 1024
                users.setdefault((state.pod, state.user), []).extend(
                    (base + o, value) for o in offsets
                )
            for (pod, user), points in users.items():
                labels = gpu.labels(State(0.0, None, 0.0, pod=pod))
                labels.update(pid="4242", process_name="python", user=user)
                yield "gputop_process_memory_used_bytes", _labels(labels), points

    def truth(
        self, by: str, idle_pct: float = 1.0, busy_pct: float = 30.0
    ) -> dict[str, dict[str, float]]:
        """GPU-hours per group as the ledger should count them."""
        hours = self.step / HOUR
        out: dict[str, dict[str, float]] = {}
        stable = by in ("node", "gpu-model")
        for gpu in self.gpus:
            for state in gpu.states:
                if state.util is None:
                    if stable:
                        group = gpu.node if by == "node" else gpu.model
                        _add(out, group, "unknown", hours)
                    else:
                        _add(out, "(not seen)", "unknown", hours)
                    continue
                group = _group(by, gpu, state)
                held_evidence = (
                    state.pod is not None
                    or (gpu.memory and state.memory_mib is not None and state.memory_mib >= 1024)
                    or bool(state.processes)
                )
                idle = state.util <= idle_pct
                held = held_evidence or not idle
                known_free = gpu.memory or (
                    gpu.exporter == "gputop" and state.processes is not None
                )
                _add(out, group, "present", hours)
                _add(out, group, "active", state.util / 100.0 * hours)
                _add(out, group, "energy_kwh", state.power_w * hours / 1000.0)
                if held:
                    _add(out, group, "allocated", hours)
                    if idle:
                        _add(out, group, "idle_held", hours)
                        _add(out, group, "idle_held_kwh", state.power_w * hours / 1000.0)
                    elif state.util < busy_pct:
                        _add(out, group, "waiting", hours)
                elif known_free:
                    _add(out, group, "free", hours)
                else:
                    _add(out, group, "unknown", hours)
        return out

    def longest_idle(self, group_by: str, group: str) -> tuple[float, float, int]:
        """(start, seconds, most GPUs) of the group's longest run of steps with a GPU held
        idle."""
        counts = [0] * self.steps
        for gpu in self.gpus:
            for index, state in enumerate(gpu.states):
                if state.util is None or state.util > 1.0 or _group(group_by, gpu, state) != group:
                    continue
                held = (
                    state.pod is not None
                    or (gpu.memory and (state.memory_mib or 0) >= 1024)
                    or bool(state.processes)
                )
                if held:
                    counts[index] += 1
        best = (0.0, 0.0, 0)
        run_start = None
        peak = 0
        for index, count in enumerate([*counts, 0]):
            if count:
                if run_start is None:
                    run_start, peak = index, 0
                peak = max(peak, count)
            elif run_start is not None:
                seconds = (index - run_start) * self.step
                if seconds > best[1]:
                    best = (self.start + run_start * self.step, seconds, peak)
                run_start = None
        return best


def _add(out: dict[str, dict[str, float]], group: str, key: str, value: float) -> None:
    row = out.setdefault(group, {})
    row[key] = row.get(key, 0.0) + value


def _group(by: str, gpu: Gpu, state: State) -> str:
    if by == "node":
        return gpu.node
    if by == "gpu-model":
        return gpu.model
    if by == "namespace":
        return state.pod[0] if state.pod else "(none)"
    if by == "pod":
        return f"{state.pod[0]}/{state.pod[1]}" if state.pod else "(none)"
    if by == "user":
        return state.user or "(none)"
    if by == "job":
        return state.job or "(none)"
    raise ValueError(by)


H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def week(
    end: float,
    *,
    days: int = 7,
    nodes: int = 8,
    gpus_per_node: int = 8,
    step: float = 600.0,
    interval: float = 300.0,
) -> History:
    """The test fleet: ``days`` ending at ``end`` (a multiple of ``step``)."""
    steps = round(days * DAY / step)
    start = end - steps * step
    fleet: list[Gpu] = []
    for n in range(nodes):
        kind = n % 8
        node = f"node-{n}"
        model = H100 if kind < 4 else A100
        exporter = "dcgm" if kind < 4 else "gputop"
        for i in range(gpus_per_node):
            gpu = Gpu(
                node, i, model, exporter, engine=kind in (0, 1), memory=not (kind == 3 and i == 7)
            )
            for s in range(steps):
                gpu.states.append(_state(kind, n, i, round(s * step) // 60, exporter))
            fleet.append(gpu)
    return History(start, step, interval, steps, fleet)


def _state(kind: int, n: int, i: int, minute: int, exporter: str) -> State:
    """GPU ``i`` of a node of ``kind`` during the step that starts ``minute`` minutes into
    the history (whole minutes: no rounding decides a boundary)."""
    hour = minute / 60
    day = 24 * 60
    processes = 0 if exporter == "gputop" else None
    if kind == 0:
        # ml/trainer-7 holds GPUs 0-1 all week, busy, but idle from day 2 22:10 for 9 h 40 min.
        if i < 2:
            begin = 2 * day + 22 * 60 + 10
            idle = begin <= minute < begin + 9 * 60 + 40
            return State(0.0 if idle else 90.0, 40 * GIB_MIB, 120.0 if idle else 600.0,
                         pod=(f"ml{'' if n < 8 else n // 8}", "trainer-7"))  # fmt: skip
        # The others: free (a little memory, no pod).
        return State(0.0, 300.0, 70.0)
    if kind == 1:
        # Batch pods come and go: every 12 h a new pod holds GPUs 0-3 for 6 h at 60 %.
        block = int(hour // 12)
        if i < 4 and hour % 12 < 6:
            return State(60.0, 30 * GIB_MIB, 450.0, pod=("ml", f"batch-{n}-{block}"))
        return State(0.0, 0.0, 65.0)
    if kind == 2:
        # research/notebook holds the whole node all week, idle.
        return State(0.0, 2 * GIB_MIB, 90.0, pod=("research", f"notebook-{n}"))
    if kind == 3:
        # A sweep holds GPUs 0-3 and waits (10 %); GPU 7 has no FB_USED: idle but unknown.
        if i < 4:
            return State(
                10.0, 20 * GIB_MIB, 150.0, pod=("research", f"sweep-{n}"), job=f"{4240 + n}"
            )
        return State(0.0, 0.0, 66.0)
    if kind == 4:
        # gputop export: ml/infer holds the node at 50 % (processes, and its pod).
        return State(50.0, 16 * GIB_MIB, 300.0, pod=("ml", f"infer-{n}"), processes=1, user="alice")
    if kind == 5:
        # gputop export: all free.
        return State(0.0, 300.0, 60.0, processes=0)
    if kind == 6:
        # gputop export: processes without pods, busy; stale for an hour on day 3.
        if 3 * day + 5 * 60 <= minute < 3 * day + 6 * 60:
            return State(None, None, 0.0)
        return State(80.0, 10 * GIB_MIB, 400.0, processes=2, user="bob")
    # kind 7, gputop export restarted on day 5: 20 minutes without samples; held idle by a
    # process that leaked (memory held, 0 %) on GPUs 0-1.
    if 5 * day + 12 * 60 <= minute < 5 * day + 12 * 60 + 20:
        return State(None, None, 0.0)
    if i < 2:
        return State(0.0, 8 * GIB_MIB, 80.0, processes=1, user="carol")
    return State(0.0, 300.0, 60.0, processes=processes)


def _labels(labels: dict[str, str]) -> str:
    inner = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels.items()
    )
    return "{" + inner + "}"


def write_openmetrics(history: History, out: IO[str]) -> int:
    """The history as OpenMetrics text (timestamps in seconds); returns the sample count."""
    count = 0
    current = None
    for metric, labels, points in history.series():
        if metric != current:
            current = metric
            out.write(f"# TYPE {metric} gauge\n")
        out.write("".join(f"{metric}{labels} {value:g} {at:.3f}\n" for at, value in points))
        count += len(points)
    out.write("# EOF\n")
    return count


def write_prometheus_text(history: History, out: IO[str]) -> int:
    """The history in the Prometheus text format with millisecond timestamps (what
    VictoriaMetrics's ``/api/v1/import/prometheus`` takes)."""
    count = 0
    for metric, labels, points in history.series():
        out.write(
            "".join(f"{metric}{labels} {value:g} {math.floor(at * 1000)}\n" for at, value in points)
        )
        count += len(points)
    return count
