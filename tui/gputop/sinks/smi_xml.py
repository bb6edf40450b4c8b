"""`--record FILE`: append snapshots as `nvidia-smi -q -x` documents.

A recording is what ``nvidia-smi -q -x -l 1 > FILE`` would have written: whole documents one
after another, each with nvidia-smi's prolog, element names and units (schema v12), so gputop's
replay and other smi-XML readers (telegraf's nvidia_smi input, Prometheus exporters) read it.
Only what the snapshot model holds is written; a missing value is written the way nvidia-smi
writes it (``N/A``, ``[Not Supported]``, ...) so that replay gives back the same reason, and an
element whose value a source never reported is left out, as nvidia-smi versions that lack it
do.

Each document is written with one ``write`` call and flushed (optionally fsynced), so a
recorder killed mid-run loses at most the document it was writing, which replay drops with a
warning. ``.gz`` files get one complete gzip member per document: readers see one stream.
"""

from __future__ import annotations

import gzip
import math
import os
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TypeVar
from xml.sax.saxutils import escape, quoteattr

from gputop.errors import BadArguments, GputopError, NoPermission
from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    ProcessSample,
    Reason,
    Snapshot,
    ThrottleReason,
    Unavailable,
    reason_for,
)
from gputop.sinks.whole import write_whole

PROLOG = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
)

REASON_TEXT: dict[Reason, str] = {
    Reason.NOT_AVAILABLE: "N/A",
    Reason.UNDER_MIG: "N/A",
    Reason.NOT_SUPPORTED: "[Not Supported]",
    Reason.NO_PERMISSION: "[Insufficient Permissions]",
    Reason.DEPRECATED: "Requested functionality has been deprecated",
    Reason.ERROR: "[Unknown Error]",
    Reason.GPU_LOST: "[GPU is lost]",
    Reason.INVALID: "[Invalid Value]",
    Reason.NOT_IN_LOG: "[Not In This Log]",  # a converted text log had no such column
    Reason.NOT_EXPORTED: "[Not Exported]",  # a remote machine's exporter did not publish it
}
"""How nvidia-smi spells each reason; NOT_REPORTED is spelled by leaving the element out."""

CLOCK_EVENT_REASONS = tuple(
    reason.value for reason in ThrottleReason if reason is not ThrottleReason.UNKNOWN
)
"""nvidia-smi's clock event (throttle) reasons, in its order (it writes no element for
``unknown``)."""

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MIB = 1024 * 1024
_T = TypeVar("_T")
# XML 1.0 cannot carry most control characters, which process names may contain.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class RecordingFailed(GputopError):
    """Writing the recording failed mid-run (disk full, file removed, I/O error)."""

    exit_code = 1


def format_timestamp(moment: datetime) -> str:
    """nvidia-smi's ``Fri Aug  4 11:44:30 2023``, in English whatever the locale."""
    return (
        f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:2d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} {moment.year}"
    )


def _number(value: float) -> str:
    """Whole numbers without a decimal point, others as short as round-trips."""
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _watts(value: float) -> str:
    text = f"{value:.2f}"
    return text if float(text) == value else repr(float(value))


def _mib(value: int) -> str:
    return f"{value // _MIB} MiB"


def _flag(value: bool) -> str:
    return "Enabled" if value else "Disabled"


class _Document:
    """Builds one document's text with nvidia-smi's tab indentation."""

    __slots__ = ("_depth", "_lines")

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._depth = 0

    def open(self, tag: str, attributes: str = "") -> None:
        self._lines.append(f"{chr(9) * self._depth}<{tag}{attributes}>")
        self._depth += 1

    def close(self, tag: str) -> None:
        self._depth -= 1
        self._lines.append(f"{chr(9) * self._depth}</{tag}>")

    def leaf(self, tag: str, text: str) -> None:
        clean = escape(_NOT_XML.sub("", text))
        self._lines.append(f"{chr(9) * self._depth}<{tag}>{clean}</{tag}>")

    def value(
        self,
        tag: str,
        value: _T | None,
        unavailable: Unavailable,
        path: str,
        fmt: Callable[[_T], str],
        *,
        optional: bool = False,
    ) -> None:
        """Write ``value``, or why it is missing; nothing if it was never reported.

        ``optional`` elements (ones older nvidia-smi versions lack) are left out when the
        value is missing for no stated reason; the others then read ``N/A``.
        """
        if value is not None and not (isinstance(value, float) and not math.isfinite(value)):
            self.leaf(tag, fmt(value))
            return
        reason = reason_for(unavailable, path)
        if reason is Reason.NOT_REPORTED or (reason is None and optional):
            return
        self.leaf(tag, REASON_TEXT.get(reason, "N/A") if reason is not None else "N/A")

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"


def _reported(unavailable: Unavailable, *paths: str) -> bool:
    """False when every path was missing from the source document (NOT_REPORTED)."""
    return any(reason_for(unavailable, path) is not Reason.NOT_REPORTED for path in paths)


def _memory(
    doc: _Document, tag: str, memory: Memory, unavailable: Unavailable, prefix: str
) -> None:
    if memory == Memory() and not _reported(
        unavailable, f"{prefix}.total", f"{prefix}.used", f"{prefix}.free"
    ):
        return
    doc.open(tag)
    doc.value("total", memory.total, unavailable, f"{prefix}.total", _mib)
    doc.value("reserved", memory.reserved, unavailable, f"{prefix}.reserved", _mib, optional=True)
    doc.value("used", memory.used, unavailable, f"{prefix}.used", _mib)
    doc.value("free", memory.free, unavailable, f"{prefix}.free", _mib)
    doc.close(tag)


def _clocks(
    doc: _Document, tag: str, clocks: Clocks, unavailable: Unavailable, prefix: str
) -> None:
    doc.open(tag)
    mhz: Callable[[int], str] = lambda value: f"{value} MHz"  # noqa: E731
    doc.value("graphics_clock", clocks.graphics, unavailable, f"{prefix}.graphics", mhz)
    doc.value("sm_clock", clocks.sm, unavailable, f"{prefix}.sm", mhz)
    doc.value("mem_clock", clocks.memory, unavailable, f"{prefix}.memory", mhz)
    doc.value("video_clock", clocks.video, unavailable, f"{prefix}.video", mhz, optional=True)
    doc.close(tag)


def _clock_event_reasons(doc: _Document, gpu: GpuSample) -> None:
    reasons = gpu.throttle_reasons
    if reasons is None:
        why = gpu.reason("throttle_reasons")
        if why is Reason.NOT_REPORTED:
            return
        doc.open("clocks_event_reasons")
        for name in CLOCK_EVENT_REASONS:
            doc.leaf(
                f"clocks_event_reason_{name}", REASON_TEXT.get(why or Reason.NOT_AVAILABLE, "N/A")
            )
        doc.close("clocks_event_reasons")
        return
    doc.open("clocks_event_reasons")
    # Active ones first, in the snapshot's order, so that replay gives back the same tuple.
    for name in reasons:
        doc.leaf(f"clocks_event_reason_{name}", "Active")
    for name in CLOCK_EVENT_REASONS:
        if name not in reasons:
            doc.leaf(f"clocks_event_reason_{name}", "Not Active")
    doc.close("clocks_event_reasons")


def _ecc_errors(doc: _Document, errors: EccErrors) -> None:
    # The model holds totals, which the single_bit/double_bit form names as such; the v12
    # sram/dram split would claim a breakdown we do not have. Every reader of either form
    # (gputop's included) takes the totals from it.
    doc.open("ecc_errors")
    for scope, corrected, uncorrected in (
        ("volatile", errors.volatile_corrected, errors.volatile_uncorrected),
        ("aggregate", errors.aggregate_corrected, errors.aggregate_uncorrected),
    ):
        doc.open(scope)
        for kind, count in (("single_bit", corrected), ("double_bit", uncorrected)):
            doc.open(kind)
            doc.leaf("total", "N/A" if count is None else str(count))
            doc.close(kind)
        doc.close(scope)
    doc.close("ecc_errors")


def _yes_no(value: bool) -> str:
    return "Yes" if value else "No"


def _memory_repair(doc: _Document, gpu: GpuSample) -> None:
    """``<retired_pages>`` and ``<remapped_rows>``, as nvidia-smi nests them; left out when
    the source never reported them."""
    u = gpu.unavailable
    pages = gpu.retired_pages
    if _reported(
        u, "retired_pages.single_bit", "retired_pages.double_bit", "retired_pages.pending"
    ):
        doc.open("retired_pages")
        for tag, value, path in (
            ("multiple_single_bit_retirement", pages.single_bit, "retired_pages.single_bit"),
            ("double_bit_retirement", pages.double_bit, "retired_pages.double_bit"),
        ):
            doc.open(tag)
            doc.value("retired_count", value, u, path, str)
            doc.close(tag)
        doc.value("pending_retirement", pages.pending, u, "retired_pages.pending", _yes_no)
        doc.close("retired_pages")
    rows = gpu.remapped_rows
    if _reported(
        u,
        "remapped_rows.correctable",
        "remapped_rows.uncorrectable",
        "remapped_rows.pending",
        "remapped_rows.failure",
    ):
        doc.open("remapped_rows")
        doc.value("remapped_row_corr", rows.correctable, u, "remapped_rows.correctable", str)
        doc.value("remapped_row_unc", rows.uncorrectable, u, "remapped_rows.uncorrectable", str)
        doc.value("remapped_row_pending", rows.pending, u, "remapped_rows.pending", _yes_no)
        doc.value("remapped_row_failure", rows.failure, u, "remapped_rows.failure", _yes_no)
        doc.close("remapped_rows")


def _optional_id(value: int | None) -> str:
    return "N/A" if value is None else str(value)


def _mig_device(doc: _Document, device: MigDeviceSample) -> None:
    missing = device.unavailable
    doc.open("mig_device")
    doc.leaf("index", _optional_id(device.index))
    doc.leaf("gpu_instance_id", _optional_id(device.gpu_instance_id))
    doc.leaf("compute_instance_id", _optional_id(device.compute_instance_id))
    if device.sm_count is not None or _reported(missing, "sm_count"):
        doc.open("device_attributes")
        doc.open("shared")
        doc.value("multiprocessor_count", device.sm_count, missing, "sm_count", str)
        doc.close("shared")
        doc.close("device_attributes")
    _memory(doc, "fb_memory_usage", device.memory, missing, "memory")
    _memory(doc, "bar1_memory_usage", device.bar1, missing, "bar1")
    doc.close("mig_device")


def _process(doc: _Document, process: ProcessSample) -> None:
    doc.open("process_info")
    doc.leaf("gpu_instance_id", _optional_id(process.gpu_instance_id))
    doc.leaf("compute_instance_id", _optional_id(process.compute_instance_id))
    doc.leaf("pid", str(process.pid))
    doc.leaf("type", process.type or "N/A")
    # nvidia-smi leaves the name empty when it cannot read it (Windows, other namespaces).
    doc.leaf("process_name", process.name or "")
    doc.leaf("used_memory", "N/A" if process.memory_used is None else _mib(process.memory_used))
    doc.close("process_info")


def _gpu(doc: _Document, gpu: GpuSample) -> None:
    u = gpu.unavailable
    pct: Callable[[float], str] = lambda value: f"{_number(value)} %"  # noqa: E731
    celsius: Callable[[float], str] = lambda value: f"{_number(value)} C"  # noqa: E731
    watts: Callable[[float], str] = lambda value: f"{_watts(value)} W"  # noqa: E731
    doc.open("gpu", "" if gpu.pci_bus_id is None else f" id={quoteattr(gpu.pci_bus_id)}")
    doc.value("product_name", gpu.name, u, "name", str)
    doc.value("product_architecture", gpu.architecture, u, "architecture", str, optional=True)
    doc.value("persistence_mode", gpu.persistence_mode, u, "persistence_mode", _flag)
    if gpu.mig_mode is not None or _reported(u, "mig_mode"):
        doc.open("mig_mode")
        doc.value("current_mig", gpu.mig_mode, u, "mig_mode", _flag)
        doc.close("mig_mode")
    if gpu.mig_devices:
        doc.open("mig_devices")
        for device in gpu.mig_devices:
            _mig_device(doc, device)
        doc.close("mig_devices")
    else:
        doc.leaf("mig_devices", "None")
    doc.value("serial", gpu.serial, u, "serial", str)
    doc.value("uuid", gpu.uuid, u, "uuid", str)
    if reason_for(u, "pci_bus_id") is not None or gpu.pci_bus_id is not None:
        doc.open("pci")
        # A reason here means the element said so and the id came from <gpu id=...>.
        bus_id = None if reason_for(u, "pci_bus_id") is not None else gpu.pci_bus_id
        doc.value("pci_bus_id", bus_id, u, "pci_bus_id", str)
        doc.close("pci")
    doc.value("fan_speed", gpu.fan_speed, u, "fan_speed", pct)
    doc.value("performance_state", gpu.performance_state, u, "performance_state", str)
    _clock_event_reasons(doc, gpu)
    _memory(doc, "fb_memory_usage", gpu.memory, u, "memory")
    _memory(doc, "bar1_memory_usage", gpu.bar1, u, "bar1")
    doc.value("compute_mode", gpu.compute_mode, u, "compute_mode", str)
    doc.open("utilization")
    doc.value("gpu_util", gpu.utilization.gpu, u, "utilization.gpu", pct)
    doc.value("memory_util", gpu.utilization.memory, u, "utilization.memory", pct)
    doc.value("encoder_util", gpu.utilization.encoder, u, "utilization.encoder", pct)
    doc.value("decoder_util", gpu.utilization.decoder, u, "utilization.decoder", pct)
    doc.close("utilization")
    if gpu.ecc_mode is not None or reason_for(u, "ecc_mode") is not None:
        doc.open("ecc_mode")
        doc.value("current_ecc", gpu.ecc_mode, u, "ecc_mode", _flag)
        doc.close("ecc_mode")
    _ecc_errors(doc, gpu.ecc_errors)
    _memory_repair(doc, gpu)
    temperature = gpu.temperature
    doc.open("temperature")
    doc.value("gpu_temp", temperature.gpu, u, "temperature.gpu", celsius)
    doc.value("gpu_temp_max_threshold", temperature.shutdown, u, "temperature.shutdown", celsius)
    doc.value("gpu_temp_slow_threshold", temperature.slowdown, u, "temperature.slowdown", celsius)
    doc.value(
        "gpu_temp_max_gpu_threshold",
        temperature.max_operating,
        u,
        "temperature.max_operating",
        celsius,
        optional=True,
    )
    doc.value("memory_temp", temperature.memory, u, "temperature.memory", celsius, optional=True)
    doc.close("temperature")
    power = gpu.power
    doc.open("gpu_power_readings")
    doc.value("power_state", gpu.performance_state, u, "performance_state", str)
    doc.value("power_draw", power.draw, u, "power.draw", watts)
    doc.value("current_power_limit", power.limit, u, "power.limit", watts)
    doc.value("default_power_limit", power.default_limit, u, "power.default_limit", watts)
    doc.value("min_power_limit", power.min_limit, u, "power.min_limit", watts)
    doc.value("max_power_limit", power.max_limit, u, "power.max_limit", watts)
    doc.close("gpu_power_readings")
    _clocks(doc, "clocks", gpu.clocks, u, "clocks")
    _clocks(doc, "max_clocks", gpu.max_clocks, u, "max_clocks")
    if gpu.processes:
        doc.open("processes")
        for process in gpu.processes:
            _process(doc, process)
        doc.close("processes")
    else:
        doc.leaf("processes", "")
    doc.close("gpu")


EVENTS_TAG = "gputop_health_events"


def snapshot_to_xml(snapshot: Snapshot) -> bytes:
    """One complete `nvidia-smi -q -x` document holding ``snapshot``."""
    doc = _Document()
    doc.open("nvidia_smi_log")
    stamp = snapshot.timestamp
    doc.leaf("timestamp", "N/A" if stamp is None else format_timestamp(stamp))
    if snapshot.driver_version is not None:
        doc.leaf("driver_version", snapshot.driver_version)
    doc.leaf("cuda_version", snapshot.cuda_version or "N/A")
    if snapshot.attached_gpus is not None:
        doc.leaf("attached_gpus", str(snapshot.attached_gpus))
    for gpu in snapshot.gpus:
        _gpu(doc, gpu)
    _events(doc, snapshot)
    doc.close("nvidia_smi_log")
    return (PROLOG + doc.text()).encode("utf-8")


def _events(doc: _Document, snapshot: Snapshot) -> None:
    """gputop's own element (nvidia-smi has none): the health events that came with this
    snapshot, so that a replay and `gputop report` of the recording see them too. Readers
    of nvidia-smi XML skip an element they do not know."""
    if not snapshot.events:
        return
    doc.open(EVENTS_TAG)
    for event in snapshot.events:
        doc.open("event")
        doc.leaf("time", event.time.isoformat())
        doc.leaf("gpu", str(event.gpu))
        doc.leaf("kind", event.kind.name.lower())
        for tag, value in (
            ("uuid", event.uuid),
            ("xid", event.xid),
            ("gpu_instance_id", event.gpu_instance_id),
            ("compute_instance_id", event.compute_instance_id),
        ):
            if value is not None:
                doc.leaf(tag, str(value))
        doc.close("event")
    doc.close(EVENTS_TAG)


class SmiXmlWriter:
    """Appends snapshots to a file as a stream of nvidia-smi XML documents."""

    option = "--record"
    """The command-line option that asks for this sink (messages name it)."""

    def __init__(self, path: Path, *, fsync: bool = False, compress: bool | None = None) -> None:
        """Open ``path`` for appending (created if missing).

        Args:
            path: the recording; a name ending in ``.gz`` is gzip-compressed.
            fsync: also force each document to the disk, not just to the OS.
            compress: override the choice made from the suffix.

        Raises:
            NoPermission: the file may not be written.
            BadArguments: the path cannot be written for another reason (no such folder).
        """
        self.path = path
        self._fsync = fsync
        self._compress = path.suffix == ".gz" if compress is None else compress
        self.count = 0
        """Documents written by this writer."""
        try:
            self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - closed in close()
        except PermissionError:
            raise NoPermission(f"--record {path}: permission denied") from None
        except OSError as error:
            raise BadArguments(
                f"--record {path}: cannot write: {error.strerror or error}"
            ) from None

    def write(self, snapshot: Snapshot) -> None:
        """Append one document and push it out of our buffers.

        Raises:
            RecordingFailed: the write failed (disk full, I/O error).
        """
        data = snapshot_to_xml(snapshot)
        if self._compress:
            data = gzip.compress(data, mtime=0)
        try:
            # Whole or not at all: a document cut off by a full disk would be cut back.
            write_whole(self._file, data)
            if self._fsync:
                os.fsync(self._file.fileno())
        except OSError as error:
            raise RecordingFailed(
                f"--record {self.path}: write failed: {error.strerror or error}"
            ) from None
        self.count += 1

    def close(self) -> None:
        """Close the file; safe to call twice."""
        self._file.close()

    def __enter__(self) -> SmiXmlWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
