"""`nvidia-smi -q` text (``==============NVSMI LOG==============``) as a recording.

Each log's indented ``Label : value`` lines are rebuilt into the element tree that
`nvidia-smi -q -x` writes for the same machine (labels mapped to the XML's tags), and that
tree goes through the XML reader's own converters: the two formats give the same values,
the same reasons for what is missing, the same MIG profiles (worked out from SM count and
memory, as the text names no profile either). A `-q -l N` stream is several logs one after
the other; `-q -i N` says `Attached GPUs : 8` and holds one GPU block, as its XML does.
"""

from __future__ import annotations

import re
import threading
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from gputop.errors import BadCapture
from gputop.model import GpuSample, Reason, Snapshot
from gputop.sources.recordings.linelog import LineLog, LogIndex, open_regular
from gputop.sources.smi.gpu import gpu_sample, parts_of
from gputop.sources.smi.values import count
from gputop.sources.smi.xml import parse_timestamp

Element = ET.Element

MARKER = b"==============NVSMI LOG=============="
_GPU_HEADER = re.compile(r"GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")

_LABELS = {
    "serial number": "serial",
    "gpu uuid": "uuid",
    "mig devices": "mig_devices",
    "mig device": "mig_device",
    "shared fb memory usage": "fb_memory_usage",
    "shared bar1 memory": "bar1_memory_usage",
    "bar1 memory usage": "bar1_memory_usage",
    "instantaneous power draw": "instant_power_draw",
}
"""Text labels whose XML tag is not the label in lower case with ``_`` for the rest."""

_CLOCKS = {"graphics": "graphics_clock", "sm": "sm_clock", "memory": "mem_clock"}
_CLOCKS["video"] = "video_clock"
_THROTTLE = {"idle": "gpu_idle", "display clock setting": "display_clocks_setting"}
_TEMPERATURE = {
    "gpu": "gpu_temp",
    "gpu current temp": "gpu_temp",
    "gpu shutdown temp": "gpu_temp_max_threshold",
    "gpu slowdown temp": "gpu_temp_slow_threshold",
    "gpu max operating temp": "gpu_temp_max_gpu_threshold",
    "memory current temp": "memory_temp",
    "gpu t.limit temp": "gpu_temp_tlimit",
    "gpu shutdown t.limit temp": "gpu_temp_max_tlimit_threshold",
    "gpu slowdown t.limit temp": "gpu_temp_slow_tlimit_threshold",
    "gpu max operating t.limit temp": "gpu_temp_max_gpu_tlimit_threshold",
}
_BY_PARENT: dict[str, dict[str, str]] = {
    "mig_mode": {"current": "current_mig", "pending": "pending_mig"},
    "ecc_mode": {"current": "current_ecc", "pending": "pending_ecc"},
    "utilization": {
        "gpu": "gpu_util",
        "memory": "memory_util",
        "encoder": "encoder_util",
        "decoder": "decoder_util",
    },
    "clocks": _CLOCKS,
    "max_clocks": _CLOCKS,
    "pci": {"bus id": "pci_bus_id"},
    "temperature": _TEMPERATURE,
    # `-q` prints the retired-page counts as values where the XML nests a `retired_count`.
    "retired_pages": {
        "single bit ecc": "multiple_single_bit_retirement",
        "double bit ecc": "double_bit_retirement",
        "pending page blacklist": "pending_blacklist",
        "pending page retirement": "pending_retirement",
    },
    "remapped_rows": {
        "correctable error": "remapped_row_corr",
        "uncorrectable error": "remapped_row_unc",
        "pending": "remapped_row_pending",
        "remapping failure occurred": "remapped_row_failure",
    },
    "processes": {
        "process id": "pid",
        "name": "process_name",
        "used gpu memory": "used_memory",
    },
}
_NON_WORD = re.compile(r"[^a-z0-9]+")
_DEPRECATION_NOTE = re.compile(r"\s*\[Deprecated[^\]]*\]$")


def looks_like(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is `nvidia-smi -q` text."""
    return head.lstrip(b" \t\r\n\xef\xbb\xbf").startswith(MARKER)


def _tag(parent: str, label: str) -> str:
    key = label.lower()
    if parent in _BY_PARENT and key in _BY_PARENT[parent]:
        return _BY_PARENT[parent][key]
    if parent in ("clocks_event_reasons", "clocks_throttle_reasons"):
        reason = _THROTTLE.get(key) or _NON_WORD.sub("_", key).strip("_")
        return f"{parent[:-1]}_{reason}"
    return _LABELS.get(key) or _NON_WORD.sub("_", key).strip("_") or "_"


def _split(line: str) -> tuple[int, str, str | None]:
    """(indent, label, value or None for a section heading)."""
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    at = body.find(" : ")
    if at >= 0:
        return indent, body[:at].strip(), body[at + 3 :].strip()
    stripped = body.rstrip()
    if stripped.endswith(" :"):
        return indent, stripped[:-2].strip(), ""
    return indent, stripped, None


def _tree(text: str) -> Element:
    """The log's lines as the element tree of its XML twin."""
    root = Element("nvidia_smi_log")
    stack: list[tuple[int, Element]] = [(-1, root)]
    base: int | None = None
    for raw in text.splitlines():
        line = raw.expandtabs(4).rstrip()
        if not line.strip():
            continue
        indent, label, value = _split(line)
        if base is None:
            # A log pasted indented (a Markdown code block, an e-mail) is read as written.
            base = indent
        indent = max(indent - base, 0)
        if label == MARKER.decode():
            continue
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value is None and indent == 0 and _GPU_HEADER.match(label):
            gpu = ET.SubElement(root, "gpu", id=label[4:])
            stack[1:] = [(indent, gpu)]
            continue
        child = ET.SubElement(parent, _tag(parent.tag, label))
        if value is None:
            stack.append((indent, child))
        else:
            child.text = value
        # A value's deeper lines (`HW Slowdown : …` then `HW Thermal Slowdown : …`) belong
        # to the heading above it: nvidia-smi indents them for show, its XML keeps them flat.
    return root


def _regroup(gpu: Element) -> None:
    """Put the text's flat layout into the XML's nesting: bare `MIG Device` blocks into one
    ``<mig_devices>``, each process's lines into a ``<process_info>``."""
    bare = [child for child in gpu if child.tag == "mig_device"]
    if bare:
        devices = Element("mig_devices")
        for child in bare:
            gpu.remove(child)
            devices.append(child)
        gpu.append(devices)
    for readings in gpu.iterfind("gpu_power_readings"):
        # 6xx drivers nest the limits in `GPU Ceiling Power Limit`: lifted to where every
        # other driver (and the reader) has them.
        for ceiling in readings.findall("gpu_ceiling_power_limit"):
            readings.remove(ceiling)
            readings.extend(ceiling)
    processes = gpu.find("processes")
    if processes is None or processes.find("process_info") is not None:
        return
    groups: list[Element] = []
    for child in list(processes):
        processes.remove(child)
        current = groups[-1] if groups else None
        if (
            current is None
            or current.find(child.tag) is not None
            or (child.tag == "gpu_instance_id" and current.find("pid") is not None)
        ):
            current = Element("process_info")
            groups.append(current)
        current.append(child)
    processes.extend(groups)


def parse_log(data: bytes) -> Snapshot:
    """One `nvidia-smi -q` log as a Snapshot.

    Raises:
        BadCapture: the bytes are not an `nvidia-smi -q` log.
    """
    if b"\x00" in data:
        raise BadCapture("binary data inside an `nvidia-smi -q` log")
    root = _tree(data.decode("utf-8", errors="replace"))
    gpus = root.findall("gpu")
    if not gpus and root.find("timestamp") is None:
        raise BadCapture("not an `nvidia-smi -q` log (no Timestamp and no GPU block)")
    for gpu in gpus:
        _regroup(gpu)
    cuda = _version(root.findtext("cuda_version"))
    driver = _version(root.findtext("driver_version"))
    return Snapshot(
        timestamp=parse_timestamp(root.findtext("timestamp")),
        gpus=tuple(_sample(index, gpu) for index, gpu in enumerate(gpus)),
        driver_version=driver or None,
        cuda_version=None if cuda.lower() in ("", "not found", "n/a") else cuda,
        attached_gpus=count(root.findtext("attached_gpus")),
    )


def _version(value: str | None) -> str:
    """A version as the XML and CSV outputs give it: 6xx drivers write `610.62 [Deprecated;
    will be removed in CUDA 14.0. Use KMD Version instead]` in `-q` text, `610.62` elsewhere."""
    return _DEPRECATION_NOTE.sub("", (value or "").strip())


def _sample(index: int, gpu: Element) -> GpuSample:
    sample = gpu_sample(index, gpu.get("id"), parts_of(gpu))
    if gpu.find("product_name") is not None:
        return sample
    # Every full `-q` names the product; a block without it is `-q -d TYPE` output (health
    # checks run `-d PAGE_RETIREMENT`, `-d MEMORY`), which leaves the other sections out:
    # the driver did report them, this log just does not hold them.
    unavailable = tuple(
        (path, Reason.NOT_IN_LOG if reason is Reason.NOT_REPORTED else reason)
        for path, reason in sample.unavailable
    )
    return replace(sample, unavailable=unavailable)


class _Scanner:
    """Each log runs from its marker line to the next marker (or the end of the file)."""

    def __init__(self, index: LogIndex) -> None:
        self._index = index
        self._start: int | None = None
        self._stamp: datetime | None = None
        self._stamp_seen = False

    def feed(self, offset: int, line: bytes) -> None:
        stripped = line.strip()
        if stripped == MARKER:
            self.finish(offset)
            self._start, self._stamp, self._stamp_seen = offset, None, False
        elif not self._stamp_seen and stripped.startswith(b"Timestamp") and b" : " in line:
            self._stamp_seen = True
            value = line.split(b" : ", 1)[1].decode("utf-8", errors="replace")
            self._stamp = parse_timestamp(value.strip())

    def finish(self, end: int) -> None:
        if self._start is not None:
            self._index.add(self._start, end, self._stamp)
            self._start = None


def _parse(data: bytes, layout: int, stamp: datetime | None) -> Snapshot:
    return parse_log(data)


def open_text(
    path: Path | str, *, follow: bool = False, ended: threading.Event | None = None
) -> LineLog:
    """Open a file of `nvidia-smi -q` text (one log, or a `-q -l N` stream of them);
    ``follow``: the file is still being written (the first log is waited for).

    Raises:
        BadCapture: missing, unreadable, or holding no `nvidia-smi -q` log.
    """
    path = Path(path)
    handle = open_regular(path)
    try:
        index = LogIndex()
        log = LineLog(path, handle, index, _parse, [], _Scanner(index), follow=follow, ended=ended)
        if not log.wait_for(0):
            raise BadCapture(f"{path}: no `nvidia-smi -q` log ({MARKER.decode()}) in it")
        log.snapshot(0)  # the first must read, or the file is refused
    except BadCapture as error:
        handle.close()
        message = str(error)
        raise BadCapture(
            message if message.startswith(str(path)) else f"{path}: {message}"
        ) from None
    except OSError as error:
        handle.close()
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
    return log
