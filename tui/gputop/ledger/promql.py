"""The ledger's queries: Prometheus classifies every GPU at every step and counts by group.

Each query is one ``query_range`` whose step is the ledger's step ``S``: at each point ``t``
it looks at the window ``(t - S, t]`` of each GPU's series. A GPU's activity in a step is
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0-1, as percent) where it has it, else
``DCGM_FI_DEV_GPU_UTIL``. dcgm-exporter's and ``gputop export``'s series have the same names
and the same labels on every family of one GPU, so activity, memory, processes and power of
one GPU meet by their whole label set, with no join: one set of queries reads both exporters,
in any mix. A pod holds the GPUs whose series carry a ``pod`` label (dcgm-exporter's
Kubernetes mapping; ``gputop export`` sets it too); without one, memory in use or a process
count says it is held.

What comes back is per group (the ``--by`` labels, with ``pod``) and step: ``count by`` and
``sum by``, never a GPU's raw samples. Each figure is its own short query, so each can be
evaluated on its own thread of the server; the ``SELECTORS`` of the heaviest bound a chunk.
MIG instances (``GPU_I_ID``) are left out: a MIG GPU counts by its own series.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from gputop.ledger.thresholds import Thresholds

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


SELECTORS = 6
"""Series selectors in the heaviest query (held idle by memory or processes): each reads
its samples, which bounds how long a chunk may be."""

FIGURES = (
    "present",
    "activity",
    "idle",
    "low",
    "idle_res",
    "free",
    "power",
    "idle_power_pod",
    "idle_power_res",
)
"""The queries of one chunk (see ``LedgerQueries.queries``)."""


@dataclass(frozen=True, slots=True)
class LedgerQueries:
    """The PromQL of one ledger: ``by`` a grouping, at ``step`` seconds."""

    by: GroupBy
    step: float
    thresholds: Thresholds = Thresholds()  # noqa: RUF009 - frozen, so one default is safe
    match: str = ""
    """``--match``: label matchers every selector gets (``Hostname=~"a100-.*"``)."""

    def _matchers(self, *more: str) -> str:
        return ",".join(m for m in (*more, self.match) if m)

    def _selector(self, metric: str, pod: bool | None) -> str:
        matchers = [] if metric in (PROCESSES, PROCESS_MEMORY) else [WHOLE_GPU]
        if pod is not None:
            matchers.append('pod!=""' if pod else 'pod=""')
        return f"{metric}{{{self._matchers(*matchers)}}}[{duration(self.step)}]"

    def _series(self, metric: str, pod: bool | None = None) -> str:
        return self._user(f"avg_over_time({self._selector(metric, pod)})")

    def _user(self, vector: str) -> str:
        """``--by user``: ``vector`` with the ``user`` of a process on its GPU (gputop's
        process series), or none; a GPU shared by several users' processes in one step is
        filed under one of them."""
        if self.by is not GroupBy.USER:
            return vector
        matchers = self._matchers('user!=""')
        processes = f"{PROCESS_MEMORY}{{{matchers}}}[{duration(self.step)}]"
        users = f"topk by (UUID) (1, max by (UUID, user) (0 * count_over_time({processes})) + 1)"
        return f"(({vector}) * on (UUID) group_left (user) ({users}) or ignoring (user) ({vector}))"

    def _match(self) -> str:
        # Vectors of one GPU meet by their labels; the user joined onto one side is not
        # on the other.
        return " ignoring (user)" if self.by is GroupBy.USER else ""

    def activity(self, pod: bool | None = None) -> str:
        """Per GPU and step: its activity in percent, with its series' labels."""
        engine = f"100 * avg_over_time({self._selector(ENGINE, pod)})"
        util = f"avg_over_time({self._selector(UTIL, pod)})"
        # Both drop the metric name: one GPU's two are the same series, and ``or`` keeps
        # the engine's. DCGM's blank values (huge numbers) are no activity.
        return self._user(f"(({engine} or {util}) <= 100)")

    def _idle(self, pod: bool | None) -> str:
        t = self.thresholds
        activity = self.activity(pod)
        idle = f"{activity} == 0" if t.idle_pct <= 0 else f"{activity} <= {t.idle_pct:g}"
        if t.power_floor_w is not None:
            power = self._series(POWER, pod)
            idle = f"({idle}) unless{self._match()} ({power} >= {t.power_floor_w:g})"
        return f"({idle})"

    def _held_by_resource(self) -> str:
        """Per GPU without a pod: memory at or over the threshold, or a process."""
        t = self.thresholds
        memory = self._series(MEMORY, False)
        processes = self._series(PROCESSES, False)
        return f"({memory} >= {t.held_memory_mib:g} or {processes} > 0)"

    def queries(self) -> dict[str, str]:
        """Each figure's query (``FIGURES``), per group, pod or not, and step."""
        by = ", ".join((*self.by.labels, "pod"))
        match = self._match()
        t = self.thresholds
        resource = self._held_by_resource()
        known = f"({self._series(MEMORY, False)} or {self._series(PROCESSES, False)})"
        idle_free = self._idle(False)
        return {
            "present": f"count by ({by}) ({self.activity()})",
            "activity": f"sum by ({by}) ({self.activity()})",
            "idle": f"count by ({by}) {self._idle(None)}",
            "low": f"count by ({by}) ({self.activity()} < {t.busy_pct:g})",
            "idle_res": f"count by ({by}) ({idle_free} and{match} {resource})",
            "free": (
                f"count by ({by}) (({idle_free} and{match} {known}) unless{match} {resource})"
            ),
            "power": f"sum by ({by}) ({self._series(POWER)})",
            "idle_power_pod": (
                f"sum by ({by}) ({self._series(POWER, True)} and{match} {self._idle(True)})"
            ),
            "idle_power_res": (
                f"sum by ({by}) (({self._series(POWER, False)} and{match} {idle_free})"
                f" and{match} {resource})"
            ),
        }

    def scale_probe(self, seconds: float) -> str:
        """How many GPUs, and how many samples each, over ``seconds`` (to size the chunks)."""
        selector = "{" + self._matchers(f'__name__=~"{UTIL}|{ENGINE}"', WHOLE_GPU) + "}"
        return f"sum by (UUID) (count_over_time({selector}[{duration(seconds)}]))"
