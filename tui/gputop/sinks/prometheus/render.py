"""A snapshot as Prometheus metric families, and their text exposition.

The families are prometheus-client ``Metric`` objects, filled from the field table: every
GPU, MIG and process row with a ``prometheus`` name is a family, its value times the row's
``export_scale`` (dcgm-exporter's MiB where the model holds bytes). A value that is None is
not emitted: Prometheus then has no sample, never a made-up 0. What dcgm-exporter has no name
for is ``gputop_…``: the diagnosis state of each GPU, how long it has been waiting, the
active throttle reasons, per-process memory and SM %, and how fresh the sample is.

The text is written here rather than by ``prometheus_client.generate_latest``, which sorts
labels by name and adds ``_total`` to counters: dcgm-exporter's counters
(``DCGM_FI_DEV_ECC_SBE_VOL_TOTAL``, ``DCGM_EXP_CLOCK_EVENTS_COUNT``) have no such suffix and
its labels come in its template's order, which dashboards and diff-based checks see.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from prometheus_client import utils as _client_utils
from prometheus_client.metrics_core import Metric

from gputop.model import GpuSample, MigDeviceSample, Snapshot
from gputop.model.fields import GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS, Field, Value
from gputop.model.gpu_state import GpuState
from gputop.model.throttle import ThrottleReason
from gputop.sinks.prometheus import dcgm
from gputop.sinks.prometheus.health import (
    ERR_CODE,
    ERR_MSG,
    EVENT_COUNTER,
    XID_COUNTER,
    XID_GAUGE,
    GpuHealth,
    health_of,
)
from gputop.sinks.prometheus.labels import (
    Labels,
    ProcessDetail,
    gpu_labels,
    mig_labels,
    one_pod,
    process_labels,
    with_labels,
)
from gputop.sinks.prometheus.tracker import GpuExtras

STATES = tuple(state.value for state in GpuState)
"""``gputop_gpu_state``'s states (``gputop.model.gpu_state.GpuState``), each a series."""

_go_float = cast(Callable[[float], str], _client_utils.floatToGoString)
"""prometheus-client's value formatting (``+Inf``, ``1e+06`` as Go writes them)."""

_UNITS = {"B": "bytes", "%": "%", "°C": "C", "MHz": "MHz", "W": "W", "s": "s"}


@dataclass(frozen=True, slots=True)
class Exported:
    """Everything one scrape renders: the newest snapshot and what is known about it."""

    snapshot: Snapshot
    extras: Mapping[int, GpuExtras]
    """Per GPU index (``ExportTracker``)."""
    age_seconds: float
    """Since the sampler took the snapshot."""
    stale: bool
    """The sampler is late: no sample arrived when one was due."""
    host: str | None
    """The ``Hostname`` label (``--hostname``, else the snapshot's host)."""
    detail: ProcessDetail = ProcessDetail.BASIC
    window_ms: int = dcgm.DEFAULT_CLOCK_EVENTS_WINDOW_MS
    health: Mapping[int, GpuHealth] = dataclasses.field(default_factory=dict)
    """Per GPU index, its XIDs and health events since the exporter started."""


def family_of(name: str, field: Field | None = None) -> tuple[str, str]:
    """(type, help) of metric ``name``: dcgm-exporter's for its names, else from the row."""
    known = dcgm.DCGM_FAMILIES.get(name)
    if known is not None:
        return known.type, known.help
    if field is None:
        raise KeyError(name)
    unit = _UNITS.get(field.unit, field.unit)
    label = field.label[0].upper() + field.label[1:]
    if field.value is Value.FLAG:
        return "gauge", f"{label}: 1 yes, 0 no."
    return "gauge", f"{label} (in {unit})." if unit else f"{label}."


class _Families:
    """Families by name, in the order they are first added."""

    def __init__(self) -> None:
        self.by_name: dict[str, Metric] = {}

    def add(self, name: str, labels: Labels, value: float, field: Field | None = None) -> None:
        family = self.by_name.get(name)
        if family is None:
            kind, text = family_of(name, field)
            family = self.by_name[name] = Metric(name, text, kind)
        family.add_sample(name, labels, value)

    def own(self, name: str, text: str, labels: Labels, value: float, kind: str = "gauge") -> None:
        family = self.by_name.get(name)
        if family is None:
            family = self.by_name[name] = Metric(name, text, kind)
        family.add_sample(name, labels, value)


def _number(field: Field, obj: object) -> float | None:
    value = field.read(obj)
    if value is None:
        return None
    kind = field.value
    if kind is Value.FLAG:
        return 1.0 if value else 0.0
    if kind is Value.TEXT:
        # P-states are exported as DCGM does, the number after the P.
        text = str(value).strip().upper()
        return float(text[1:]) if text[:1] == "P" and text[1:].isdigit() else None
    if kind is Value.NAMES:
        return None
    return float(value) * field.export_scale


def snapshot_families(exported: Exported) -> list[Metric]:
    """The metric families of one scrape, families with no sample left out."""
    families = _Families()
    snapshot = exported.snapshot
    host = exported.host
    driver = snapshot.driver_version
    gpu_bases = []
    for gpu in snapshot.gpus:
        base = gpu_labels(gpu, host, driver)
        base.update(one_pod(gpu.holders, gpu.processes))
        gpu_bases.append((gpu, base))
        for field in GPU_FIELDS:
            if field.prometheus is None or field.value is Value.NAMES:
                continue
            value = _number(field, gpu)
            if value is not None:
                families.add(field.prometheus, base, value, field)
    mig_bases: dict[tuple[int, int], Labels] = {}
    for gpu in snapshot.gpus:
        for device in _instances(gpu):
            assert device.gpu_instance_id is not None
            labels = mig_labels(gpu, device.profile, device.gpu_instance_id, host, driver)
            labels.update(one_pod(device.holders, device.processes))
            mig_bases[(gpu.index, device.gpu_instance_id)] = labels
            for field in MIG_FIELDS:
                if field.prometheus is None:
                    continue
                value = _number(field, device)
                if value is not None:
                    families.add(field.prometheus, labels, value, field)
    for gpu, base in gpu_bases:
        _clock_events(families, base, exported.extras.get(gpu.index), exported.window_ms)
    for gpu, base in gpu_bases:
        _throttle(families, base, gpu)
    for gpu, base in gpu_bases:
        _health(families, base, health_of(exported.health, gpu.index))
    if exported.detail is not ProcessDetail.NONE:
        for gpu, base in gpu_bases:
            _processes(families, gpu, base, mig_bases, exported.detail)
    for gpu, base in gpu_bases:
        _diagnosis(families, base, exported.extras.get(gpu.index))
    for gpu, base in gpu_bases:
        families.own(
            "gputop_gpu_stale",
            "1 when this GPU's values are not from the latest sample (a driver call hung, "
            "or the sampler is late).",
            base,
            1.0 if gpu.stale or exported.stale else 0.0,
        )
    exporter: Labels = {dcgm.HOSTNAME: host} if host else {}
    families.own(
        "gputop_sample_age_seconds",
        "Seconds since the sampler took the sample this scrape shows.",
        exporter,
        exported.age_seconds,
    )
    families.own(
        "gputop_stale",
        "1 when the sampler is late: no new sample arrived when one was due.",
        exporter,
        1.0 if exported.stale else 0.0,
    )
    return list(families.by_name.values())


def _instances(gpu: GpuSample) -> Iterable[MigDeviceSample]:
    """One MIG device per GPU instance (dcgm-exporter's entities are GPU instances)."""
    seen: set[int] = set()
    for device in gpu.mig_devices:
        instance = device.gpu_instance_id
        if instance is not None and instance not in seen:
            seen.add(instance)
            yield device


def _clock_events(
    families: _Families, base: Labels, extras: GpuExtras | None, window_ms: int
) -> None:
    if extras is None or extras.clock_events is None:
        return
    window = {dcgm.WINDOW_LABEL: str(window_ms)}
    if not extras.clock_events:
        # As dcgm-exporter does when no event was seen: one series, no clock_event, 0.
        families.add(dcgm.CLOCK_EVENTS, with_labels(base, window), 0.0)
        return
    for name, count in extras.clock_events:
        # dcgm-exporter's labels map renders sorted: clock_event, then window_size_in_ms.
        labels = with_labels(base, {dcgm.CLOCK_EVENT_LABEL: name, **window})
        families.add(dcgm.CLOCK_EVENTS, labels, float(count))


_REASONS = tuple(reason.value for reason in ThrottleReason if reason is not ThrottleReason.UNKNOWN)
_THROTTLE = next(f for f in GPU_FIELDS if f.value is Value.NAMES and f.prometheus)


def _throttle(families: _Families, base: Labels, gpu: GpuSample) -> None:
    """One series per reason, 1 when active: ``avg_over_time`` then gives the share of time."""
    active = _THROTTLE.read(gpu)
    if active is None:
        return
    assert _THROTTLE.prometheus is not None
    text = "1 while this clock-event (throttle) reason is active, by NVML's name."
    for reason in (*_REASONS, *(name for name in active if name not in _REASONS)):
        value = 1.0 if reason in active else 0.0
        families.own(_THROTTLE.prometheus, text, with_labels(base, {"reason": reason}), value)


_PROCESS_EXPORTED = tuple(f for f in PROCESS_FIELDS if f.prometheus is not None)


def _processes(
    families: _Families,
    gpu: GpuSample,
    base: Labels,
    mig_bases: Mapping[tuple[int, int], Labels],
    detail: ProcessDetail,
) -> None:
    seen: set[tuple[int | None, int]] = set()
    for process in gpu.processes:
        instance = process.gpu_instance_id
        key = (instance, process.pid)
        if key in seen:
            continue  # the driver lists a process once per type on some versions
        seen.add(key)
        device = None if instance is None else mig_bases.get((gpu.index, instance))
        labels = process_labels(device if device is not None else base, process, detail)
        for field in _PROCESS_EXPORTED:
            assert field.prometheus is not None
            value = _number(field, process)
            if value is not None:
                families.add(field.prometheus, labels, value, field)


def _health(families: _Families, base: Labels, health: GpuHealth) -> None:
    """The last XID as dcgm-exporter shows it, and the counts of XIDs and other events."""
    if health.last_xid is None:
        families.add(XID_GAUGE, base, 0.0)
    else:
        labels = with_labels(
            base, {ERR_CODE: str(health.last_xid), ERR_MSG: health.last_message or ""}
        )
        families.add(XID_GAUGE, labels, float(health.last_xid))
    for code, count in health.xids:
        families.own(
            XID_COUNTER,
            "XID errors of this GPU since the exporter started, by XID code.",
            with_labels(base, {"xid": str(code)}),
            float(count),
            kind="counter",
        )
    for name, count in health.events:
        families.own(
            EVENT_COUNTER,
            "Health events other than XIDs (double-bit ECC, page retirement failure, ...) "
            "of this GPU since the exporter started.",
            with_labels(base, {"event": name}),
            float(count),
            kind="counter",
        )


def _diagnosis(families: _Families, base: Labels, extras: GpuExtras | None) -> None:
    if extras is None:
        return
    text = (
        "1 for the GPU's state in the latest sample (busy, waiting: work loaded but low "
        "utilization, idle, throttled, unknown), 0 for the others."
    )
    for state in STATES:
        value = 1.0 if extras.state == state else 0.0
        families.own("gputop_gpu_state", text, with_labels(base, {"state": state}), value)
    if extras.waiting_seconds is not None:
        families.own(
            "gputop_gpu_waiting_seconds",
            "Seconds the GPU has been waiting without a break (work loaded, low "
            "utilization); 0 when it is not waiting.",
            base,
            extras.waiting_seconds,
        )


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def exposition(families: Iterable[Metric]) -> bytes:
    """The Prometheus text format (0.0.4) of ``families``, labels in their given order."""
    out: list[str] = []
    label_text: dict[int, tuple[Mapping[str, str], str]] = {}
    for family in families:
        if not family.samples:
            continue
        name = family.name
        text = family.documentation.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {name} {text}\n# TYPE {name} {family.type}\n")
        for sample in family.samples:
            labels = sample.labels
            # Series of one device share their labels' dict: each is written out once.
            cached = label_text.get(id(labels))
            if cached is None or cached[0] is not labels:
                body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
                cached = label_text[id(labels)] = (labels, f"{{{body}}}" if body else "")
            out.append(f"{sample.name}{cached[1]} {_go_float(sample.value)}\n")
    return "".join(out).encode("utf-8")


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The text format's content type, as Prometheus 2.x and dcgm-exporter speak it."""
