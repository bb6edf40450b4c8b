"""The ledger's queries: Prometheus reduces each GPU's samples to its mean in every step.

Each query is one ``query_range`` whose step is the ledger's step ``S``: at each point ``t``
``avg_over_time`` reads the window ``(t - S, t]`` of one family's series, so what comes
back is one point per GPU and step, never a raw sample, and each stored sample is read
once. The step's state is then judged here (``judge.py``), as a recording's is: PromQL has
no shared subexpressions, so judging in the server (a query per figure, each joining the
families it needs) read every sample 3.5 times and took 4.6x as long
(``benchmarks/README.md``, "The GPU-hours ledger").

A GPU's activity in a step is ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0-1, as percent) where it
has it, else ``DCGM_FI_DEV_GPU_UTIL``. dcgm-exporter's and ``gputop export``'s series have
the same names and the same labels on every family of one GPU, so activity, memory,
processes and power of one GPU meet by their whole label set: one set of queries reads
both exporters, in any mix. A pod holds the GPUs whose series carry a ``pod`` label
(dcgm-exporter's Kubernetes mapping; ``gputop export`` sets it too); without one, memory in
use or a process count says it is held. MIG instances (``GPU_I_ID``) are left out: a MIG GPU
counts by its own series.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

UTIL = "DCGM_FI_DEV_GPU_UTIL"
ENGINE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
MEMORY = "DCGM_FI_DEV_FB_USED"
POWER = "DCGM_FI_DEV_POWER_USAGE"
PROCESSES = "gputop_processes"
PROCESS_MEMORY = "gputop_process_memory_used_bytes"
"""gputop's per-process series: with ``--export-processes full`` they carry ``user``."""

WHOLE_GPU = 'GPU_I_ID=""'


class GroupBy(enum.Enum):
    """``--by``: what the ledger adds up by."""

    NODE = "node"
    NAMESPACE = "namespace"
    POD = "pod"
    JOB = "job"
    USER = "user"
    GPU_MODEL = "gpu-model"

    @property
    def stable(self) -> bool:
        """A GPU stays in its group all the time (its node, its model): the steps it was
        not seen are that group's unknown hours; otherwise nobody can say whose they were."""
        return self in (GroupBy.NODE, GroupBy.GPU_MODEL)

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels a group is told by (``pod`` is always asked for besides)."""
        return {
            GroupBy.NODE: ("Hostname", "instance"),
            GroupBy.NAMESPACE: ("namespace",),
            GroupBy.POD: ("namespace",),
            GroupBy.JOB: ("hpc_job",),
            GroupBy.USER: ("user",),
            GroupBy.GPU_MODEL: ("modelName",),
        }[self]

    def group_of(self, labels: Mapping[str, str]) -> str:
        """The group an answer's series is of ("" for none)."""
        if self is GroupBy.NODE:
            return labels.get("Hostname") or labels.get("instance", "")
        if self is GroupBy.POD:
            pod = labels.get("pod", "")
            namespace = labels.get("namespace", "")
            return f"{namespace}/{pod}" if pod and namespace else pod
        return labels.get(self.labels[0], "")


def duration(seconds: float) -> str:
    """``seconds`` as a PromQL duration."""
    return f"{max(1, round(seconds * 1000))}ms"


FAMILIES = {
    "engine": ENGINE,
    "util": UTIL,
    "memory": MEMORY,
    "processes": PROCESSES,
    "power": POWER,
}
"""The families a ledger reads, one query each per chunk of its span."""


@dataclass(frozen=True, slots=True)
class LedgerQueries:
    """The PromQL of one ledger: ``by`` a grouping, at ``step`` seconds."""

    by: GroupBy
    step: float
    match: str = ""
    """``--match``: label matchers every selector gets (``Hostname=~"a100-.*"``)."""

    def _matchers(self, *more: str) -> str:
        return ",".join(m for m in (*more, self.match) if m)

    def _selector(self, metric: str, *more: str) -> str:
        whole = () if metric in (PROCESSES, PROCESS_MEMORY) else (WHOLE_GPU,)
        return f"{metric}{{{self._matchers(*whole, *more)}}}[{duration(self.step)}]"

    def queries(self) -> dict[str, str]:
        """Per family (``FAMILIES``): every GPU's mean in each step, with its labels; and by
        ``--by user``, ``users``: which users had a process on each GPU (``UUID``) in each
        step (gputop's per-process series, with ``--export-processes full``)."""
        queries = {
            name: f"avg_over_time({self._selector(metric)})" for name, metric in FAMILIES.items()
        }
        if self.by is GroupBy.USER:
            processes = self._selector(PROCESS_MEMORY, 'user!=""')
            queries["users"] = f"max by (UUID, user) (count_over_time({processes}))"
        return queries

    def scale_probe(self, seconds: float) -> str:
        """How many GPUs, and how many samples each, over ``seconds`` (to size the chunks).

        Each family counted apart: a GPU that reports both (dcgm-exporter's default
        counters, gputop's on Hopper) would otherwise give two series of the same labels
        once ``count_over_time`` drops their names, which Prometheus refuses."""
        window = duration(seconds)
        util, engine = (
            f"sum by (UUID) (count_over_time({metric}{{{self._matchers(WHOLE_GPU)}}}[{window}]))"
            for metric in (UTIL, ENGINE)
        )
        return f"{util} or {engine}"
