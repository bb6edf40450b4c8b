"""Parse one `nvidia-smi -q -x` document into a Snapshot.

nvidia-smi's XML changed a lot between schema v7 (driver 352) and v13 (driver 590): power moved
from ``power_readings`` to ``gpu_power_readings``, ``power_draw`` split into average/instant,
throttle reasons became clock-event reasons, ECC counters were regrouped. We key on the
elements present, never on the DTD version, and every value the document does not give
becomes None with a Reason.

Hostile input: documents that declare entities are refused before parsing, expat never fetches external entities, and the size of a document is bounded
by the caller (see ``recording``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

from gputop.errors import BadCapture
from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    Power,
    ProcessSample,
    Reason,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.model.mig_profiles import derive_profile

Element = ET.Element

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""A 16-GPU document with every supported clock listed is a few MB; more is not nvidia-smi."""

_ROOT_TAG = b"<nvidia_smi_log"
# Long lists of supported clock pairs are most of the bytes of many captures and nothing we
# show; cutting them before parsing more than doubles throughput.
_SKIPPED_BLOCKS = ((b"<supported_clocks>", b"</supported_clocks>"),)

_REASONS_BY_TEXT = {
    "n/a": Reason.NOT_AVAILABLE,
    "[n/a]": Reason.NOT_AVAILABLE,
    "not supported": Reason.NOT_SUPPORTED,
    "[not supported]": Reason.NOT_SUPPORTED,
    "requested functionality has been deprecated": Reason.DEPRECATED,
    "[requested functionality has been deprecated]": Reason.DEPRECATED,
    "insufficient permissions": Reason.NO_PERMISSION,
    "[insufficient permissions]": Reason.NO_PERMISSION,
    "no permission": Reason.NO_PERMISSION,
    "[no permission]": Reason.NO_PERMISSION,
    "unknown error": Reason.ERROR,
    "[unknown error]": Reason.ERROR,
    "gpu is lost": Reason.GPU_LOST,
    "[gpu is lost]": Reason.GPU_LOST,
}

_UNIT_BYTES = {
    "b": 1,
    "kib": 1024,
    "kb": 1024,
    "mib": 1024**2,
    "mb": 1024**2,
    "gib": 1024**3,
    "gb": 1024**3,
}
_NUMBER = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)")


def snapshot_from_path(path: Path | str) -> Snapshot:
    """Read a file holding a single document (the first one, if it holds a stream)."""
    from gputop.sources.recording import Recording

    with Recording.open(Path(path)) as recording:
        return recording.snapshot(0)


def parse_document(data: bytes) -> Snapshot:
    """Parse the bytes of one nvidia_smi_log document.

    Raises:
        BadCapture: the bytes are not one well-formed, safe nvidia_smi_log document.
    """
    if len(data) > MAX_DOCUMENT_BYTES:
        raise BadCapture(f"document larger than {MAX_DOCUMENT_BYTES // 2**20} MiB")
    root_at = data.find(_ROOT_TAG)
    if root_at < 0:
        raise BadCapture("not an nvidia-smi XML document (no <nvidia_smi_log> element)")
    _refuse_entities(data[:root_at])
    try:
        root = ET.fromstring(_strip_unused(data))
    except ET.ParseError as error:
        raise BadCapture(f"malformed XML: {error}") from None
    if root.tag != "nvidia_smi_log":
        raise BadCapture(f"XML, but not an nvidia-smi log (root element <{root.tag}>)")
    return _snapshot(root)


def _refuse_entities(prolog: bytes) -> None:
    # Old drivers inline their DTD (element declarations only); entity declarations are what
    # expansion bombs need, and nvidia-smi never writes one.
    if b"<!ENTITY" in prolog:
        raise BadCapture("refusing XML that declares entities (possible entity-expansion bomb)")


def _strip_unused(data: bytes) -> bytes:
    for start_tag, end_tag in _SKIPPED_BLOCKS:
        if start_tag not in data:
            continue
        parts: list[bytes] = []
        pos = 0
        while True:
            start = data.find(start_tag, pos)
            if start < 0:
                break
            end = data.find(end_tag, start)
            if end < 0:
                break
            parts.append(data[pos:start])
            pos = end + len(end_tag)
        parts.append(data[pos:])
        data = b"".join(parts)
    return data


def parse_timestamp(text: str | None) -> datetime | None:
    """nvidia-smi's ``Fri Aug  4 11:44:30 2023`` (local time, no zone), or None."""
    if not text:
        return None
    try:
        return datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None


class _Reader:
    """Reads values of one element tree, noting why each missing one is missing."""

    __slots__ = ("missing", "under_mig")

    def __init__(self) -> None:
        self.missing: list[tuple[str, Reason]] = []
        self.under_mig = False

    def text(self, parent: Element | None, tag: str, path: str) -> str | None:
        node = None if parent is None else parent.find(tag)
        if node is None:
            self.missing.append((path, Reason.NOT_REPORTED))
            return None
        value = (node.text or "").strip()
        reason = _REASONS_BY_TEXT.get(value.lower())
        if reason is not None:
            self.missing.append((path, reason))
            return None
        return value

    def number(self, parent: Element | None, tag: str, path: str) -> float | None:
        value = self.text(parent, tag, path)
        if value is None:
            return None
        match = _NUMBER.match(value)
        if match is None:
            self.missing.append((path, Reason.ERROR))
            return None
        return float(match.group(1))

    def integer(self, parent: Element | None, tag: str, path: str) -> int | None:
        value = self.number(parent, tag, path)
        return None if value is None else int(value)

    def percent(self, parent: Element | None, tag: str, path: str) -> float | None:
        value = self.number(parent, tag, path)
        if value is None and self.under_mig and self.missing[-1][0] == path:
            # nvidia-smi prints N/A for utilization of a MIG-enabled GPU: it is not 0, and
            # not unsupported either: the driver cannot attribute it under MIG.
            self.missing[-1] = (path, Reason.UNDER_MIG)
        return value

    def size(self, parent: Element | None, tag: str, path: str) -> int | None:
        value = self.text(parent, tag, path)
        if value is None:
            return None
        match = _NUMBER.match(value)
        if match is None:
            self.missing.append((path, Reason.ERROR))
            return None
        unit = _UNIT_BYTES.get(match.group(2).lower(), 1024**2)
        return int(float(match.group(1)) * unit)

    def flag(self, parent: Element | None, tag: str, path: str) -> bool | None:
        value = self.text(parent, tag, path)
        if value is None:
            return None
        lowered = value.lower()
        if lowered in ("enabled", "yes", "active", "on"):
            return True
        if lowered in ("disabled", "no", "not active", "off"):
            return False
        self.missing.append((path, Reason.ERROR))
        return None

    def first(self, parent: Element | None, tags: tuple[str, ...], path: str) -> float | None:
        """The first of several alternative elements that holds a number."""
        if parent is None:
            self.missing.append((path, Reason.NOT_REPORTED))
            return None
        mark = len(self.missing)
        present = [tag for tag in tags if parent.find(tag) is not None]
        for tag in present:
            value = self.number(parent, tag, path)
            if value is not None:
                del self.missing[mark:]
                return value
        if len(self.missing) > mark:
            # Keep only the reason of the preferred element.
            del self.missing[mark + 1 :]
        else:
            self.missing.append((path, Reason.NOT_REPORTED))
        return None

    def unavailable(self) -> tuple[tuple[str, Reason], ...]:
        return tuple(self.missing)


def _memory(reader: _Reader, node: Element | None, prefix: str) -> Memory:
    if node is None:
        for name in ("total", "used", "free"):
            reader.missing.append((f"{prefix}.{name}", Reason.NOT_REPORTED))
        return Memory()
    has_reserved = node.find("reserved") is not None
    return Memory(
        total=reader.size(node, "total", f"{prefix}.total"),
        used=reader.size(node, "used", f"{prefix}.used"),
        free=reader.size(node, "free", f"{prefix}.free"),
        reserved=reader.size(node, "reserved", f"{prefix}.reserved") if has_reserved else None,
    )


def _power(reader: _Reader, gpu: Element) -> Power:
    node = gpu.find("gpu_power_readings")
    if node is None:
        node = gpu.find("power_readings")
    return Power(
        draw=reader.first(
            node, ("power_draw", "average_power_draw", "instant_power_draw"), "power.draw"
        ),
        limit=reader.first(
            node, ("enforced_power_limit", "current_power_limit", "power_limit"), "power.limit"
        ),
        default_limit=reader.number(node, "default_power_limit", "power.default_limit"),
        min_limit=reader.number(node, "min_power_limit", "power.min_limit"),
        max_limit=reader.number(node, "max_power_limit", "power.max_limit"),
    )


def _temperature(reader: _Reader, gpu: Element) -> Temperature:
    node = gpu.find("temperature")
    has_memory = node is not None and node.find("memory_temp") is not None
    has_max_op = node is not None and node.find("gpu_temp_max_gpu_threshold") is not None
    return Temperature(
        gpu=reader.number(node, "gpu_temp", "temperature.gpu"),
        memory=reader.number(node, "memory_temp", "temperature.memory") if has_memory else None,
        slowdown=reader.number(node, "gpu_temp_slow_threshold", "temperature.slowdown"),
        shutdown=reader.number(node, "gpu_temp_max_threshold", "temperature.shutdown"),
        max_operating=reader.number(
            node, "gpu_temp_max_gpu_threshold", "temperature.max_operating"
        )
        if has_max_op
        else None,
    )


def _clocks(reader: _Reader, node: Element | None, prefix: str) -> Clocks:
    has_video = node is not None and node.find("video_clock") is not None
    return Clocks(
        graphics=reader.integer(node, "graphics_clock", f"{prefix}.graphics"),
        sm=reader.integer(node, "sm_clock", f"{prefix}.sm"),
        memory=reader.integer(node, "mem_clock", f"{prefix}.memory"),
        video=reader.integer(node, "video_clock", f"{prefix}.video") if has_video else None,
    )


def _ecc_counts(node: Element | None) -> tuple[int | None, int | None]:
    """(corrected, uncorrected) from either the old single/double-bit or the sram/dram form."""
    if node is None:
        return None, None
    single = node.find("single_bit")
    if single is not None:
        double = node.find("double_bit")
        return _int_or_none(single.findtext("total")), _int_or_none(
            None if double is None else double.findtext("total")
        )
    corrected: int | None = None
    uncorrected: int | None = None
    for child in node:
        value = _int_or_none(child.text)
        if value is None:
            continue
        if "uncorrectable" in child.tag:
            uncorrected = (uncorrected or 0) + value
        elif "correctable" in child.tag:
            corrected = (corrected or 0) + value
    return corrected, uncorrected


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() else None


def _ecc(reader: _Reader, gpu: Element) -> EccErrors:
    node = gpu.find("ecc_errors")
    volatile = _ecc_counts(None if node is None else node.find("volatile"))
    aggregate = _ecc_counts(None if node is None else node.find("aggregate"))
    errors = EccErrors(volatile[0], volatile[1], aggregate[0], aggregate[1])
    if errors == EccErrors():
        reader.missing.append(("ecc_errors", Reason.NOT_AVAILABLE))
    return errors


def _throttle_reasons(reader: _Reader, gpu: Element) -> tuple[str, ...] | None:
    for tag, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        node = gpu.find(tag)
        if node is None:
            continue
        active: list[str] = []
        known = False
        for child in node:
            state = (child.text or "").strip().lower()
            if state == "active":
                active.append(child.tag.removeprefix(prefix))
                known = True
            elif state == "not active":
                known = True
        if known:
            return tuple(active)
        reader.missing.append(("throttle_reasons", Reason.NOT_AVAILABLE))
        return None
    reader.missing.append(("throttle_reasons", Reason.NOT_REPORTED))
    return None


def _process(node: Element) -> ProcessSample | None:
    pid = _int_or_none(node.findtext("pid"))
    if pid is None:
        return None
    reader = _Reader()
    kind = reader.text(node, "type", "type")
    name = reader.text(node, "process_name", "name")
    return ProcessSample(
        pid=pid,
        type=kind or None,
        name=name or None,
        memory_used=reader.size(node, "used_memory", "memory_used"),
        gpu_instance_id=_int_or_none(node.findtext("gpu_instance_id")),
        compute_instance_id=_int_or_none(node.findtext("compute_instance_id")),
    )


def _processes(gpu: Element) -> tuple[ProcessSample, ...]:
    node = gpu.find("processes")
    if node is None:
        return ()
    found = (_process(child) for child in node.iterfind("process_info"))
    return tuple(process for process in found if process is not None)


def _mig_devices(
    gpu: Element,
    gpu_name: str | None,
    gpu_memory_total: int | None,
    processes: tuple[ProcessSample, ...],
) -> tuple[MigDeviceSample, ...]:
    node = gpu.find("mig_devices")
    if node is None:
        return ()
    devices: list[MigDeviceSample] = []
    for item in node.iterfind("mig_device"):
        reader = _Reader()
        reader.under_mig = True
        gi = _int_or_none(item.findtext("gpu_instance_id"))
        ci = _int_or_none(item.findtext("compute_instance_id"))
        attributes = item.find("device_attributes/shared")
        sm_count = reader.integer(attributes, "multiprocessor_count", "sm_count")
        memory = _memory(reader, item.find("fb_memory_usage"), "memory")
        profile = derive_profile(gpu_name, gpu_memory_total, sm_count, memory.total)
        for path in ("utilization.gpu", "utilization.memory"):
            reader.missing.append((path, Reason.UNDER_MIG))
        devices.append(
            MigDeviceSample(
                index=_int_or_none(item.findtext("index")),
                gpu_instance_id=gi,
                compute_instance_id=ci,
                profile=profile,
                profile_derived=profile is not None,
                sm_count=sm_count,
                memory=memory,
                bar1=_memory(reader, item.find("bar1_memory_usage"), "bar1"),
                processes=tuple(
                    p
                    for p in processes
                    if p.gpu_instance_id == gi
                    and (p.compute_instance_id is None or p.compute_instance_id == ci)
                ),
                unavailable=reader.unavailable(),
            )
        )
    return tuple(devices)


def _gpu(index: int, gpu: Element) -> GpuSample:
    reader = _Reader()
    mig_node = gpu.find("mig_mode")
    mig_mode = reader.flag(mig_node, "current_mig", "mig_mode") if mig_node is not None else None
    if mig_node is None:
        reader.missing.append(("mig_mode", Reason.NOT_REPORTED))
    reader.under_mig = bool(mig_mode)
    name = reader.text(gpu, "product_name", "name")
    memory = _memory(reader, gpu.find("fb_memory_usage"), "memory")
    utilization_node = gpu.find("utilization")
    utilization = Utilization(
        gpu=reader.percent(utilization_node, "gpu_util", "utilization.gpu"),
        memory=reader.percent(utilization_node, "memory_util", "utilization.memory"),
        encoder=reader.percent(utilization_node, "encoder_util", "utilization.encoder"),
        decoder=reader.percent(utilization_node, "decoder_util", "utilization.decoder"),
    )
    reader.under_mig = False
    processes = _processes(gpu)
    pci_node = gpu.find("pci")
    pci_bus_id = (
        reader.text(pci_node, "pci_bus_id", "pci_bus_id") if pci_node is not None else None
    ) or gpu.get("id")
    ecc_node = gpu.find("ecc_mode")
    has_architecture = gpu.find("product_architecture") is not None
    return GpuSample(
        index=index,
        name=name,
        uuid=reader.text(gpu, "uuid", "uuid"),
        pci_bus_id=pci_bus_id,
        serial=reader.text(gpu, "serial", "serial"),
        architecture=reader.text(gpu, "product_architecture", "architecture")
        if has_architecture
        else None,
        utilization=utilization,
        memory=memory,
        bar1=_memory(reader, gpu.find("bar1_memory_usage"), "bar1"),
        temperature=_temperature(reader, gpu),
        power=_power(reader, gpu),
        fan_speed=reader.number(gpu, "fan_speed", "fan_speed"),
        performance_state=reader.text(gpu, "performance_state", "performance_state"),
        clocks=_clocks(reader, gpu.find("clocks"), "clocks"),
        max_clocks=_clocks(reader, gpu.find("max_clocks"), "max_clocks"),
        persistence_mode=reader.flag(gpu, "persistence_mode", "persistence_mode"),
        compute_mode=reader.text(gpu, "compute_mode", "compute_mode"),
        ecc_mode=reader.flag(ecc_node, "current_ecc", "ecc_mode") if ecc_node is not None else None,
        ecc_errors=_ecc(reader, gpu),
        throttle_reasons=_throttle_reasons(reader, gpu),
        mig_mode=mig_mode,
        mig_devices=_mig_devices(gpu, name, memory.total, processes) if mig_mode else (),
        processes=processes,
        # Keyword arguments evaluate left to right, so every reason above is in by now.
        unavailable=reader.unavailable(),
    )


def _snapshot(root: Element) -> Snapshot:
    cuda = (root.findtext("cuda_version") or "").strip()
    driver = (root.findtext("driver_version") or "").strip()
    return Snapshot(
        timestamp=parse_timestamp(root.findtext("timestamp")),
        gpus=tuple(_gpu(index, gpu) for index, gpu in enumerate(root.iterfind("gpu"))),
        driver_version=driver or None,
        cuda_version=None if cuda.lower() in ("", "not found", "n/a") else cuda,
        attached_gpus=_int_or_none(root.findtext("attached_gpus")),
    )
