"""Parse one `nvidia-smi -q -x` document into a Snapshot.

nvidia-smi's XML changed a lot between schema v7 (driver 352) and v13 (driver 590): power moved
from ``power_readings`` to ``gpu_power_readings``, ``power_draw`` split into average/instant,
throttle reasons became clock-event reasons, ECC counters were regrouped. We key on the
elements present, never on the DTD version, and every value the document does not give
becomes None with a Reason.

Hostile input: documents that declare entities are refused before parsing, expat never
fetches external entities, and the size of a document is bounded (see ``recording``).
"""

from __future__ import annotations

import gc
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from xml.parsers import expat

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
# Children of <gpu> that nothing reads, in the order nvidia-smi writes them. Cutting them
# out before parsing spares expat and the tree builder most of the document: long lists of
# supported clock pairs alone are most of the bytes of many captures. They are looked for in
# order within each <gpu>, so each costs a short search, and one that is absent (older
# schemas) or out of order is simply parsed.
_UNREAD_BLOCKS = tuple(
    (f"<{tag}>".encode(), f"</{tag}>".encode())
    for tag in (
        "inforom_version",
        "gpu_operation_mode",
        "gpu_virtualization_mode",
        "pci_gpu_link_info",
        "clocks_event_reasons_counters",
        "encoder_stats",
        "fbc_stats",
        "retired_pages",
        "supported_gpu_target_temp",
        "module_power_readings",
        "applications_clocks",
        "default_applications_clocks",
        "clock_policy",
        "fabric",
        "supported_clocks",
        "accounted_processes",
    )
)
# Indentation between tags becomes a text or tail string on every element; dropping it
# before parsing makes expat and the tree builder about a third faster. nvidia-smi indents
# with tabs and never puts a tab or line break inside a value, so after the prolog (whose
# DTD needs its white space) tabs and line breaks go in one C pass; captures re-indented
# with spaces take a slower regex.
_LAYOUT = b"\t\r\n"
_SPACES_BETWEEN_TAGS = re.compile(rb"> +<")

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

_MIB = 1024**2
_UNIT_BYTES = {
    "MiB": _MIB,
    "KiB": 1024,
    "GiB": 1024**3,
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
    if _ROOT_TAG not in data:
        raise BadCapture("not an nvidia-smi XML document (no <nvidia_smi_log> element)")
    _refuse_entities(data)
    # A document makes thousands of short-lived elements and none of them cycles: collecting
    # while building them costs about a seventh of the parse for nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        root = ET.fromstring(_strip_unused(data))
        if root.tag != "nvidia_smi_log":
            raise BadCapture(f"XML, but not an nvidia-smi log (root element <{root.tag}>)")
        return _snapshot(root)
    except ET.ParseError as error:
        raise BadCapture(f"malformed XML: {error}") from None
    except (LookupError, ValueError) as error:
        # An XML declaration naming an unknown or multi-byte encoding.
        raise BadCapture(f"unreadable XML: {error}") from None
    finally:
        if collecting:
            gc.enable()


class _PrologDone(Exception):
    """Raised from expat's handler at the root element: the DTD, if any, is behind."""


def _root_reached(*_: object) -> None:
    raise _PrologDone


def _entity_declared(*_: object) -> None:
    raise BadCapture("refusing XML that declares entities (possible entity-expansion bomb)")


def _refuse_entities(data: bytes) -> None:
    """Refuse a document whose DTD declares entities.

    Old drivers inline their DTD (element declarations only); entity declarations are what
    expansion bombs need, and nvidia-smi never writes one. Expat itself reads the prolog and
    reports every declaration, so no comment or string can hide one, and it stops at the
    root element: a few microseconds, where searching the whole document for "<!ENTITY"
    costs 4% of parsing.
    """
    parser = expat.ParserCreate()
    parser.EntityDeclHandler = _entity_declared
    parser.UnparsedEntityDeclHandler = _entity_declared
    parser.StartElementHandler = _root_reached
    try:
        parser.Parse(data, True)
    except _PrologDone:
        return
    except (expat.ExpatError, LookupError, ValueError):
        return  # not well-formed (or an unknown encoding): ElementTree says how


def _strip_unused(data: bytes) -> bytes:
    """The document without the blocks nothing reads and without indentation."""
    kept: list[bytes] = []
    keep_from = 0
    position = 0
    while True:
        gpu_end = data.find(b"</gpu>", position)
        if gpu_end < 0:
            break
        for start_tag, end_tag in _UNREAD_BLOCKS:
            start = data.find(start_tag, position, gpu_end)
            if start < 0:
                continue
            end = data.find(end_tag, start, gpu_end)
            if end < 0:
                continue
            kept.append(data[keep_from:start])
            keep_from = position = end + len(end_tag)
        position = gpu_end + len(b"</gpu>")
    if kept:
        kept.append(data[keep_from:])
        data = b"".join(kept)
    root_at = data.find(_ROOT_TAG)
    body = data[root_at:].translate(None, _LAYOUT)
    if b">  " in body[:4096]:
        body = _SPACES_BETWEEN_TAGS.sub(b"><", body)
    return data[:root_at] + body


def parse_timestamp(text: str | None) -> datetime | None:
    """nvidia-smi's ``Fri Aug  4 11:44:30 2023`` (local time, no zone), or None."""
    if not text:
        return None
    parts = text.split()
    # strptime costs ~10 us and runs twice per document in a read-through; this is the
    # layout nvidia-smi always writes, anything else falls back to strptime.
    if len(parts) == 5 and parts[1] in _MONTHS:
        year, day, clock = parts[4], parts[2], parts[3]
        digits = year + day + clock[:2] + clock[3:5] + clock[6:]
        if (
            len(clock) == 8
            and clock[2] == clock[5] == ":"
            and digits.isascii()
            and digits.isdigit()
        ):
            try:
                return datetime(
                    int(year),
                    _MONTHS[parts[1]],
                    int(day),
                    int(clock[:2]),
                    int(clock[3:5]),
                    int(clock[6:]),
                )
            except ValueError:
                return None
    try:
        return datetime.strptime(" ".join(parts), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None


_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
        start=1,
    )
}


def _leading_number(text: str) -> float | None:
    """The number a value starts with (``17.97 W`` is 17.97), or None; never inf or NaN."""
    try:
        # float() of the first word is several times cheaper than a regex match.
        value = float(text.partition(" ")[0])
    except ValueError:
        match = _NUMBER.match(text)  # " 12 %", "12%": odd spacing
        if match is None:
            return None
        value = float(match.group(1))
    # A run of digits past 1e308 reads as inf: garbage, not a reading.
    return value if value - value == 0.0 else None


def _children(element: Element) -> dict[str, Element]:
    """Each child by tag, the first of duplicates as ``find`` would pick.

    One dict per element with many lookups (a ``<gpu>`` has ~60 children and ~25 are read)
    is cheaper than a linear ``find`` per lookup.
    """
    return {child.tag: child for child in reversed(element)}


def _absent(tag: str) -> Element | None:
    return None


def _finder(parent: Element | None) -> Callable[[str], Element | None]:
    """``parent.find``, or a find that finds nothing when the parent itself is absent."""
    return _absent if parent is None else parent.find


class _Reader:
    """Converts element texts to values, noting why each missing one is missing.

    Each method takes the element holding the value (None when the document lacks it).
    """

    __slots__ = ("missing", "under_mig")

    def __init__(self) -> None:
        self.missing: list[tuple[str, Reason]] = []
        self.under_mig = False

    def _note(self, node: Element | None, path: str) -> None:
        """Record why ``node`` gave no value: absent, a reason text such as N/A, or garbage."""
        if node is None:
            reason = Reason.NOT_REPORTED
        else:
            reason = _REASONS_BY_TEXT.get((node.text or "").strip().lower(), Reason.ERROR)
        self.missing.append((path, reason))

    def text(self, node: Element | None, path: str) -> str | None:
        if node is None:
            self.missing.append((path, Reason.NOT_REPORTED))
            return None
        value = (node.text or "").strip()
        reason = _REASONS_BY_TEXT.get(value.lower())
        if reason is not None:
            self.missing.append((path, reason))
            return None
        return value

    def number(self, node: Element | None, path: str) -> float | None:
        text = None if node is None else node.text
        if text is not None:
            value = _leading_number(text)
            if value is not None:
                return value
        self._note(node, path)
        return None

    def integer(self, node: Element | None, path: str) -> int | None:
        value = self.number(node, path)
        return None if value is None else int(value)

    def percent(self, node: Element | None, path: str) -> float | None:
        value = self.number(node, path)
        if value is None and self.under_mig:
            # nvidia-smi prints N/A for utilization of a MIG-enabled GPU: it is not 0, and
            # not unsupported either: the driver cannot attribute it under MIG.
            self.missing[-1] = (path, Reason.UNDER_MIG)
        return value

    def size(self, node: Element | None, path: str) -> int | None:
        text = None if node is None else node.text
        if text is not None:
            words = text.split()
            if len(words) == 2 and words[1] in _UNIT_BYTES:  # "4095 MiB": the usual
                value = _leading_number(words[0])
                if value is not None:
                    return int(value * _UNIT_BYTES[words[1]])
            match = _NUMBER.match(text)
            if match is not None:
                unit = match.group(2)
                scaled = float(match.group(1)) * _UNIT_BYTES.get(unit.lower(), _MIB)
                if scaled - scaled == 0.0:
                    return int(scaled)
        self._note(node, path)
        return None

    def flag(self, node: Element | None, path: str) -> bool | None:
        value = self.text(node, path)
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
        for tag in tags:
            node = parent.find(tag)
            if node is None:
                continue
            value = self.number(node, path)
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
    reserved = node.find("reserved")
    return Memory(
        total=reader.size(node.find("total"), f"{prefix}.total"),
        used=reader.size(node.find("used"), f"{prefix}.used"),
        free=reader.size(node.find("free"), f"{prefix}.free"),
        reserved=None if reserved is None else reader.size(reserved, f"{prefix}.reserved"),
    )


def _power(reader: _Reader, gpu: dict[str, Element]) -> Power:
    node = gpu.get("gpu_power_readings")
    if node is None:
        node = gpu.get("power_readings")
    find = _finder(node)
    return Power(
        draw=reader.first(
            node, ("power_draw", "average_power_draw", "instant_power_draw"), "power.draw"
        ),
        limit=reader.first(
            node, ("enforced_power_limit", "current_power_limit", "power_limit"), "power.limit"
        ),
        default_limit=reader.number(find("default_power_limit"), "power.default_limit"),
        min_limit=reader.number(find("min_power_limit"), "power.min_limit"),
        max_limit=reader.number(find("max_power_limit"), "power.max_limit"),
    )


def _temperature(reader: _Reader, node: Element | None) -> Temperature:
    find = _finder(node)
    memory = find("memory_temp")
    max_operating = find("gpu_temp_max_gpu_threshold")
    return Temperature(
        gpu=reader.number(find("gpu_temp"), "temperature.gpu"),
        memory=None if memory is None else reader.number(memory, "temperature.memory"),
        slowdown=reader.number(find("gpu_temp_slow_threshold"), "temperature.slowdown"),
        shutdown=reader.number(find("gpu_temp_max_threshold"), "temperature.shutdown"),
        max_operating=None
        if max_operating is None
        else reader.number(max_operating, "temperature.max_operating"),
    )


def _clocks(reader: _Reader, node: Element | None, prefix: str) -> Clocks:
    find = _finder(node)
    video = find("video_clock")
    return Clocks(
        graphics=reader.integer(find("graphics_clock"), f"{prefix}.graphics"),
        sm=reader.integer(find("sm_clock"), f"{prefix}.sm"),
        memory=reader.integer(find("mem_clock"), f"{prefix}.memory"),
        video=None if video is None else reader.integer(video, f"{prefix}.video"),
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
    # ASCII only: str.isdigit() accepts "²", which int() refuses; 19 digits fit any counter.
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 else None


def _ecc(reader: _Reader, node: Element | None) -> EccErrors:
    find = _finder(node)
    volatile = _ecc_counts(find("volatile"))
    aggregate = _ecc_counts(find("aggregate"))
    errors = EccErrors(volatile[0], volatile[1], aggregate[0], aggregate[1])
    if errors == EccErrors():
        reader.missing.append(("ecc_errors", Reason.NOT_AVAILABLE))
    return errors


def _throttle_reasons(reader: _Reader, gpu: dict[str, Element]) -> tuple[str, ...] | None:
    for tag, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        node = gpu.get(tag)
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
    kind = reader.text(node.find("type"), "type")
    name = reader.text(node.find("process_name"), "name")
    return ProcessSample(
        pid=pid,
        type=kind or None,
        name=name or None,
        memory_used=reader.size(node.find("used_memory"), "memory_used"),
        gpu_instance_id=_int_or_none(node.findtext("gpu_instance_id")),
        compute_instance_id=_int_or_none(node.findtext("compute_instance_id")),
    )


def _processes(node: Element | None) -> tuple[ProcessSample, ...]:
    if node is None:
        return ()
    found = (_process(child) for child in node.iterfind("process_info"))
    return tuple(process for process in found if process is not None)


def _mig_devices(
    node: Element | None,
    gpu_name: str | None,
    gpu_memory_total: int | None,
    processes: tuple[ProcessSample, ...],
) -> tuple[MigDeviceSample, ...]:
    if node is None:
        return ()
    devices: list[MigDeviceSample] = []
    for item in node.iterfind("mig_device"):
        reader = _Reader()
        reader.under_mig = True
        gi = _int_or_none(item.findtext("gpu_instance_id"))
        ci = _int_or_none(item.findtext("compute_instance_id"))
        attributes = item.find("device_attributes/shared")
        sm_count = reader.integer(_finder(attributes)("multiprocessor_count"), "sm_count")
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


def _gpu(index: int, element: Element) -> GpuSample:
    gpu = _children(element)
    reader = _Reader()
    mig_node = gpu.get("mig_mode")
    if mig_node is None:
        mig_mode = None
        reader.missing.append(("mig_mode", Reason.NOT_REPORTED))
    else:
        mig_mode = reader.flag(mig_node.find("current_mig"), "mig_mode")
    reader.under_mig = bool(mig_mode)
    name = reader.text(gpu.get("product_name"), "name")
    memory = _memory(reader, gpu.get("fb_memory_usage"), "memory")
    find = _finder(gpu.get("utilization"))
    utilization = Utilization(
        gpu=reader.percent(find("gpu_util"), "utilization.gpu"),
        memory=reader.percent(find("memory_util"), "utilization.memory"),
        encoder=reader.percent(find("encoder_util"), "utilization.encoder"),
        decoder=reader.percent(find("decoder_util"), "utilization.decoder"),
    )
    reader.under_mig = False
    processes = _processes(gpu.get("processes"))
    pci_node = gpu.get("pci")
    pci_bus_id = (
        reader.text(pci_node.find("pci_bus_id"), "pci_bus_id") if pci_node is not None else None
    ) or element.get("id")
    ecc_node = gpu.get("ecc_mode")
    architecture = gpu.get("product_architecture")
    return GpuSample(
        index=index,
        name=name,
        uuid=reader.text(gpu.get("uuid"), "uuid"),
        pci_bus_id=pci_bus_id,
        serial=reader.text(gpu.get("serial"), "serial"),
        architecture=None if architecture is None else reader.text(architecture, "architecture"),
        utilization=utilization,
        memory=memory,
        bar1=_memory(reader, gpu.get("bar1_memory_usage"), "bar1"),
        temperature=_temperature(reader, gpu.get("temperature")),
        power=_power(reader, gpu),
        fan_speed=reader.number(gpu.get("fan_speed"), "fan_speed"),
        performance_state=reader.text(gpu.get("performance_state"), "performance_state"),
        clocks=_clocks(reader, gpu.get("clocks"), "clocks"),
        max_clocks=_clocks(reader, gpu.get("max_clocks"), "max_clocks"),
        persistence_mode=reader.flag(gpu.get("persistence_mode"), "persistence_mode"),
        compute_mode=reader.text(gpu.get("compute_mode"), "compute_mode"),
        ecc_mode=None
        if ecc_node is None
        else reader.flag(ecc_node.find("current_ecc"), "ecc_mode"),
        ecc_errors=_ecc(reader, gpu.get("ecc_errors")),
        throttle_reasons=_throttle_reasons(reader, gpu),
        mig_mode=mig_mode,
        mig_devices=_mig_devices(gpu.get("mig_devices"), name, memory.total, processes)
        if mig_mode
        else (),
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
