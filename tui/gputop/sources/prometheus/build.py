"""Series of one machine -> the same :class:`Snapshot` a local source makes.

A :class:`NodeBuilder` is handed every reading of one host (any family, any label set: a GPU's
series, its MIG instances', its processes') and puts each value where the field table says.
What no series gave is None with a reason (``not exported``), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gputop.model import (
    Activity,
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    Owner,
    Power,
    ProcessSample,
    Reason,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.model.fields import Field, Value
from gputop.model.health import RemappedRows, RetiredPages
from gputop.model.throttle import throttle_names
from gputop.sources.prometheus import families as fam
from gputop.sources.prometheus.families import Reading

_GROUPS: dict[str, type] = {
    "utilization": Utilization,
    "activity": Activity,
    "memory": Memory,
    "temperature": Temperature,
    "power": Power,
    "clocks": Clocks,
    "ecc_errors": EccErrors,
    "remapped_rows": RemappedRows,
    "retired_pages": RetiredPages,
}

_INT32_BLANK = 0x7FFFFFF0
_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)
_FP64_BLANK = 140737488355328.0
"""DCGM's "blank" values (``dcgm_structs.h``): no reading, sent as a huge number."""


def is_blank(value: float) -> bool:
    """A value DCGM (or Prometheus) uses for "nothing": NaN, infinite or DCGM's blanks."""
    if not math.isfinite(value):
        return True
    return value >= _INT64_BLANK or value == _FP64_BLANK or _INT32_BLANK <= value < 2**31


def convert(spec: Field, value: float) -> Any:
    """The model's value of ``spec`` from its exported number (None for a blank)."""
    if is_blank(value):
        return None
    number = value / spec.export_scale
    if spec.value is Value.BYTES:
        return round(number)
    if spec.value is Value.FLAG:
        return number != 0
    if spec.value is Value.TEXT:  # DCGM's P-state number; 32 is "unknown"
        return f"P{int(number)}" if 0 <= number < 32 else None
    if spec.path.startswith(("clocks.", "ecc_errors.", "remapped_rows.", "retired_pages.")):
        return round(number)
    return float(number)


@dataclass
class _Mig:
    gpu_instance_id: int | None
    profile: str | None = None
    uuid: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    holders: list[Owner] = field(default_factory=list)


@dataclass
class _Gpu:
    index: int | None
    uuid: str | None = None
    name: str | None = None
    pci_bus_id: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    shared: dict[str, Any] = field(default_factory=dict)
    """Device values read from a MIG instance's series (dcgm-exporter repeats them there)."""
    blank: set[str] = field(default_factory=set)
    migs: dict[int | None, _Mig] = field(default_factory=dict)
    holders: list[Owner] = field(default_factory=list)
    throttle: set[str] | None = None
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)
    state: str | None = None
    waiting_seconds: float | None = None
    process_count: int | None = None
    origin: str = ""
    """The scrape target of its first series (what names it when it has no UUID)."""


@dataclass(frozen=True, slots=True)
class GpuExtras:
    """What a node's exporter says of a GPU beyond the snapshot (gputop's own gauges)."""

    index: int
    state: str | None
    waiting_seconds: float | None
    process_count: int | None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


_MAY_HAVE_OWNER = frozenset((*fam.POD_LABELS, *fam.CONTAINER_LABELS))


def gpu_key(labels: Any) -> str | None:
    """What names one GPU among a host's series: its UUID, else its ``gpu`` index label."""
    uuid = labels.get("UUID") or labels.get("uuid")
    if uuid and uuid != fam.NULL:
        return str(uuid)
    index = _int(labels.get("gpu"))
    return None if index is None else f"gpu{index}"


def _add_unique(owners: list[Owner], owner: Owner | None) -> None:
    if owner is not None and owner not in owners:
        owners.append(owner)


class NodeBuilder:
    """Gathers one host's readings; :meth:`snapshot` makes its Snapshot."""

    def __init__(self, host: str) -> None:
        """Readings of ``host`` go here."""
        self.host = host
        self.instance: str | None = None
        self.instances: set[str] = set()
        """Every scrape target whose series describe this host (gputop and dcgm-exporter
        side by side on one machine are two)."""
        self.exporter = "dcgm-exporter"
        self.driver_version: str | None = None
        self._gpus: dict[str, _Gpu] = {}

    def add_all(self, readings: Iterable[Reading]) -> None:
        """Add every reading (of this host)."""
        for reading in readings:
            self.add(reading)

    def add(self, reading: Reading) -> None:
        """File one series' value under its GPU (and MIG instance, process, state)."""
        labels = reading.labels
        metric = reading.metric
        instance = labels.get("instance")
        if instance:
            if self.instance is None:
                self.instance = instance
            self.instances.add(instance)
        if metric.startswith("gputop_"):
            self.exporter = "gputop"
        driver = labels.get("DCGM_FI_DRIVER_VERSION")
        if driver and self.driver_version is None:
            self.driver_version = driver
        gpu = self._gpu(labels)
        if gpu is None:
            return
        owner = fam.owner_of(labels) if _MAY_HAVE_OWNER.intersection(labels) else None
        _add_unique(gpu.holders, owner)
        gi_text = labels.get("GPU_I_ID")
        if metric in fam.PROCESS_METRICS:
            self._process(gpu, metric, labels, reading.value)
            return
        if gi_text is not None:
            mig = self._mig(gpu, labels)
            _add_unique(mig.holders, owner)
            if self._mig_value(mig, metric, reading.value):
                return
        self._gpu_value(gpu, metric, labels, reading.value, shared=gi_text is not None)

    def _gpu(self, labels: Any) -> _Gpu | None:
        key = gpu_key(labels)
        if key is None:
            return None  # a node-wide series (none read yet): no GPU to file it under
        gpu = self._gpus.get(key)
        if gpu is not None and gpu.name is not None and gpu.pci_bus_id is not None:
            return gpu  # the common case: known, and named by an earlier series
        uuid = fam.label(labels, fam.UUID_LABELS)
        index = _int(labels.get("gpu"))
        if gpu is None:
            gpu = self._gpus[key] = _Gpu(index=index, uuid=uuid, origin=fam.origin_of(labels))
        if gpu.name is None:
            gpu.name = fam.label(labels, ("modelName",))
        if gpu.pci_bus_id is None:
            gpu.pci_bus_id = fam.label(labels, ("pci_bus_id",))
        return gpu

    def _mig(self, gpu: _Gpu, labels: Any) -> _Mig:
        gi = _int(labels.get("GPU_I_ID"))
        mig = gpu.migs.get(gi)
        if mig is None:
            mig = gpu.migs[gi] = _Mig(gpu_instance_id=gi)
        if mig.profile is None:
            mig.profile = fam.label(labels, ("GPU_I_PROFILE",))
        return mig

    def _mig_value(self, mig: _Mig, metric: str, value: float) -> bool:
        """File a MIG instance's own value; False when ``metric`` is a device-wide one."""
        if metric == fam.GR_ENGINE_ACTIVE:
            if not is_blank(value):
                mig.values["utilization.gpu"] = max(0.0, min(100.0, value * 100.0))
            return True
        if metric in fam.INSTANCE_PROFILING:
            return True  # DCGM's per-instance SM, tensor, DRAM activity: not the GPU's
        spec = fam.MIG_METRICS.get(metric)
        if spec is None and metric == fam.MIG_FREE.prometheus:
            spec = fam.MIG_FREE
        if spec is None:
            return False
        mig.values[spec.path] = convert(spec, value)
        return True

    def _gpu_value(
        self, gpu: _Gpu, metric: str, labels: Any, value: float, *, shared: bool
    ) -> None:
        target = gpu.shared if shared else gpu.values
        spec = fam.GPU_METRICS.get(metric)
        if spec is not None:
            converted = convert(spec, value)
            if converted is None:
                gpu.blank.add(spec.path)
            else:
                target[spec.path] = converted
        elif metric == fam.POWER_MGMT_LIMIT:
            if not is_blank(value):
                target.setdefault("power.limit.mgmt", float(value))
        elif metric in fam.THROTTLE_MASKS:
            if not is_blank(value):
                gpu.throttle = set(gpu.throttle or ()) | set(throttle_names(int(value)))
        elif metric == fam.THROTTLE_METRIC:
            gpu.throttle = gpu.throttle or set()
            reason = labels.get("reason")
            if reason and value > 0:
                gpu.throttle.add(reason)
        elif metric == fam.PROCESSES_METRIC:
            if not is_blank(value):
                gpu.process_count = int(value)
        elif metric == fam.STATE_METRIC:
            if value > 0 and labels.get("state"):
                gpu.state = labels["state"]
        elif metric == fam.WAITING_METRIC and not is_blank(value):
            gpu.waiting_seconds = float(value)

    def _process(self, gpu: _Gpu, metric: str, labels: Any, value: float) -> None:
        pid = _int(labels.get("pid"))
        if pid is None:
            return
        row = gpu.processes.setdefault(pid, {})
        name = labels.get("process_name") or labels.get("name") or labels.get("comm")
        if name:
            row.setdefault("name", name)
        gi = _int(labels.get("GPU_I_ID"))
        if gi is not None:
            row.setdefault("gpu_instance_id", gi)
        spec = fam.PROCESS_METRICS[metric]
        if spec.path in ("memory_used", "sm_utilization") and not is_blank(value):
            row[spec.path] = convert(spec, value)

    def gpu_identities(self) -> list[tuple[int, str]]:
        """(GPU index in the snapshot, what names the GPU in the whole fleet: its UUID, else
        its index under its scrape target; see ``identity.gpu_identity``)."""
        return [
            (index, gpu.uuid or f"{gpu.origin}#gpu{gpu.index}") for index, gpu in self._numbered()
        ]

    def extras(self) -> list[GpuExtras]:
        """gputop's own per-GPU gauges, by GPU index (empty for dcgm-exporter)."""
        return [
            GpuExtras(index, gpu.state, gpu.waiting_seconds, gpu.process_count)
            for index, gpu in self._numbered()
        ]

    def _numbered(self) -> list[tuple[int, _Gpu]]:
        known = sorted(
            (g for g in self._gpus.values() if g.index is not None), key=lambda g: g.index or 0
        )
        taken = {g.index for g in known}
        out = [(g.index or 0, g) for g in known]
        spare = (i for i in range(len(self._gpus) + len(taken)) if i not in taken)
        out.extend((next(spare), g) for g in self._gpus.values() if g.index is None)
        return out

    def snapshot(self, timestamp: datetime | None) -> Snapshot:
        """The node's GPUs at ``timestamp`` as the model's snapshot."""
        gpus = tuple(_gpu_sample(index, gpu) for index, gpu in self._numbered())
        return Snapshot(
            timestamp=timestamp,
            gpus=gpus,
            host=self.host,
            driver_version=self.driver_version,
            attached_gpus=len(gpus),
        )


def _mig_sample(mig: _Mig) -> MigDeviceSample:
    values = mig.values
    memory = Memory(
        total=values.get("memory.total"),
        used=values.get("memory.used"),
        free=values.get("memory.free"),
    )
    if memory.total is None and memory.used is not None and memory.free is not None:
        memory = Memory(total=memory.used + memory.free, used=memory.used, free=memory.free)
    unavailable = tuple(
        (path, Reason.NOT_EXPORTED)
        for path, value in (
            ("memory.used", memory.used),
            ("memory.total", memory.total),
            ("utilization.gpu", values.get("utilization.gpu")),
        )
        if value is None
    )
    return MigDeviceSample(
        index=None,
        gpu_instance_id=mig.gpu_instance_id,
        compute_instance_id=None,
        profile=mig.profile,
        uuid=mig.uuid,
        memory=memory,
        utilization=Utilization(gpu=values.get("utilization.gpu")),
        holders=tuple(mig.holders),
        unavailable=unavailable,
    )


def _gpu_sample(index: int, gpu: _Gpu) -> GpuSample:
    values = dict(gpu.shared)
    values.update(gpu.values)  # the GPU's own series win over the copies on its instances
    mgmt = values.pop("power.limit.mgmt", None)
    if "power.limit" not in values and mgmt is not None:
        values["power.limit"] = mgmt
    used, free = values.get("memory.used"), values.get("memory.free")
    if "memory.total" not in values and used is not None and free is not None:
        # nvidia-smi's total is used + free + reserved, which is how DCGM splits it too.
        values["memory.total"] = used + free + (values.get("memory.reserved") or 0)
    is_mig = bool(gpu.migs)
    if is_mig:
        values.setdefault("mig_mode", True)
    kwargs: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for path, value in values.items():
        head, _, tail = path.partition(".")
        if tail:
            groups.setdefault(head, {})[tail] = value
        else:
            kwargs[head] = value
    for head, attrs in groups.items():
        kwargs[head] = _GROUPS[head](**attrs)
    unavailable = []
    for spec in fam.GPU_METRICS.values():
        if spec.path in values or spec.path == "lost":  # lost is a flag: False unless said
            continue
        if spec.path in gpu.blank:
            reason = Reason.NOT_SUPPORTED
        elif is_mig and spec.path.startswith("utilization."):
            reason = Reason.UNDER_MIG
        else:
            reason = Reason.NOT_EXPORTED
        unavailable.append((spec.path, reason))
    if gpu.throttle is None:
        unavailable.append(("throttle_reasons", Reason.NOT_EXPORTED))
    processes = tuple(
        ProcessSample(
            pid=pid,
            name=row.get("name"),
            memory_used=row.get("memory_used"),
            gpu_instance_id=row.get("gpu_instance_id"),
            sm_utilization=row.get("sm_utilization"),
        )
        for pid, row in sorted(gpu.processes.items())
    )
    return GpuSample(
        index=index,
        name=gpu.name,
        uuid=gpu.uuid,
        pci_bus_id=gpu.pci_bus_id,
        throttle_reasons=None if gpu.throttle is None else tuple(sorted(gpu.throttle)),
        mig_devices=tuple(
            _mig_sample(m)
            for _, m in sorted(gpu.migs.items(), key=lambda item: (item[0] is None, item[0]))
        ),
        processes=processes,
        holders=tuple(gpu.holders),
        unavailable=tuple(unavailable),
        **kwargs,
    )
