"""Property tests: damaged real captures never crash the reader.

Every bundled capture is mutated (cut, bytes flipped, inserted or deleted, element texts
replaced by what drivers and file corruption produce, elements duplicated or removed); the
only exceptions that may leave ``parse_document`` and ``Recording`` are BadCapture (and
IndexError for an index out of range).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import re
import tempfile
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import escape

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputop.errors import BadCapture
from gputop.model import GpuSample, Reason, Snapshot, reason_for
from gputop.sources.smi import xml as smi_xml
from gputop.sources.smi.recording import Recording
from gputop.sources.smi.xml import parse_document

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
CAPTURES = {path.name: path.read_bytes() for path in sorted(SNAPSHOTS.glob("*.xml"))}
NAMES = sorted(CAPTURES)

_TEXT = re.compile(rb">([^<>]+)<")
# Elements whose text the reader converts: where a bad value can do harm.
_READ = (
    "timestamp",
    "driver_version",
    "cuda_version",
    "attached_gpus",
    "product_name",
    "product_architecture",
    "uuid",
    "serial",
    "pci_bus_id",
    "fan_speed",
    "performance_state",
    "persistence_mode",
    "compute_mode",
    "current_mig",
    "current_ecc",
    "gpu_util",
    "memory_util",
    "encoder_util",
    "decoder_util",
    "total",
    "used",
    "free",
    "reserved",
    "gpu_temp",
    "memory_temp",
    "gpu_temp_slow_threshold",
    "gpu_temp_max_threshold",
    "gpu_temp_max_gpu_threshold",
    "power_draw",
    "average_power_draw",
    "instant_power_draw",
    "enforced_power_limit",
    "current_power_limit",
    "power_limit",
    "default_power_limit",
    "min_power_limit",
    "max_power_limit",
    "graphics_clock",
    "sm_clock",
    "mem_clock",
    "video_clock",
    "pid",
    "type",
    "process_name",
    "used_memory",
    "gpu_instance_id",
    "compute_instance_id",
    "multiprocessor_count",
    "index",
    r"\w+_reason_\w+",
    r"sram_\w+",
    r"dram_\w+",
)
_READ_TEXT = re.compile(rb"<(" + "|".join(_READ).encode() + rb")>([^<]*)</\1>")
_ENCODINGS = ["utf-8", "UTF-16", "latin-1", "shift_jis", "euc-jp", "cp500", "no-such", "ascii"]
_LEAF = re.compile(rb"<(\w+)>[^<]*</\1>")
_BLOCK = re.compile(rb"<(\w+)>.*?</\1>", re.S)

SUSPICIOUS = [
    "N/A",
    "[N/A]",
    "Not Supported",
    "[Not Supported]",
    "Requested functionality has been deprecated",
    "[Insufficient Permissions]",
    "[Unknown Error]",
    "[GPU is lost]",
    "-1",
    "-1 MiB",
    "1e309",
    "1e309 W",
    "nan",
    "inf %",
    "-0",
    "",
    " ",
    "None",
    "Enabled",
    "Disabled",
    "Active",
    "0x1F",
    "9" * 25 + " MiB",
    "9" * 400,
    "9" * 5000,
    "1.2.3 W",
    "²",
    "\u0663\u0663 C",
    "١٢:٣٤:٥٦",
    "Fri Aug  4 11:44:30 2023",
    "Fri Aug 32 11:44:30 2023",
    "Mon Jan  1 00:00:00 0001",
    "Tue Dec 31 23:59:59 9999",
    "\U0001f525 GPU",
]

texts = st.one_of(
    st.sampled_from(SUSPICIOUS),
    st.text(max_size=40),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats().map(str),
    st.builds(
        lambda n, u: f"{n} {u}",
        st.integers(-(10**6), 10**12),
        st.sampled_from(["MiB", "W", "C", "%", "MHz", "KiB", "GiB", "TB", "?"]),
    ),
)


def _spans(pattern: re.Pattern[bytes], data: bytes) -> list[tuple[int, int]]:
    return [match.span() for match in pattern.finditer(data)]


def _read_texts(data: bytes) -> list[tuple[int, int]]:
    """Where the texts the reader converts lie."""
    return [match.span(2) for match in _READ_TEXT.finditer(data)]


def _replace(data: bytes, span: tuple[int, int], text: bytes) -> bytes:
    return data[: span[0]] + text + data[span[1] :]


@st.composite
def damaged(draw: st.DrawFn, name: str | None = None) -> bytes:
    """A bundled capture after one to five random mutations."""
    data = CAPTURES[name or draw(st.sampled_from(NAMES))]
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(
            st.sampled_from(
                [
                    *("cut", "flip", "insert", "delete", "text", "dup", "remove", "encoding"),
                    *("value", "value", "value"),
                ]
            )
        )
        if kind == "cut":
            data = data[: draw(st.integers(0, len(data)))]
        elif kind in ("flip", "insert", "delete") and data:
            at = draw(st.integers(0, len(data) - 1))
            if kind == "flip":
                data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
            elif kind == "insert":
                data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
            else:
                data = data[:at] + data[at + draw(st.integers(1, 64)) :]
        elif kind in ("text", "value"):
            # "value": a text the reader converts; "text": any text at all.
            spans = _read_texts(data) if kind == "value" else _spans(_TEXT, data)
            if spans:
                start, end = spans[draw(st.integers(0, len(spans) - 1))]
                if kind == "text":
                    start, end = start + 1, end - 1
                text = draw(texts)
                raw = text if draw(st.integers(0, 4)) == 0 else escape(text)
                data = _replace(data, (start, end), raw.encode("utf-8", "surrogatepass"))
        elif kind == "encoding":
            encoding = draw(st.sampled_from(_ENCODINGS)).encode()
            data = re.sub(
                rb"^<\?xml[^>]*\?>", b'<?xml version="1.0" encoding="%s"?>' % encoding, data
            )
        elif kind in ("dup", "remove"):
            spans = _spans(_LEAF if draw(st.booleans()) else _BLOCK, data)
            if spans:
                start, end = spans[draw(st.integers(0, len(spans) - 1))]
                kept = data[start:end] * 2 if kind == "dup" else b""
                data = data[:start] + kept + data[end:]
    return data


def _touch(snapshot: Snapshot) -> None:
    """Use every value, as the UI and JSON would."""
    assert isinstance(snapshot, Snapshot)
    for gpu in snapshot.gpus:
        assert isinstance(gpu, GpuSample)
        for _, reason in gpu.unavailable:
            assert isinstance(reason, Reason)
        for value in (gpu.memory.used, gpu.memory.total, gpu.power.draw, gpu.fan_speed):
            assert value is None or value == value  # never NaN
        for device in gpu.mig_devices:
            assert device.profile is None or device.profile.count("g.") == 1
        for process in gpu.processes:
            assert isinstance(process.pid, int)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_parse_document_survives_damage(data: bytes) -> None:
    try:
        snapshot = parse_document(data)
    except BadCapture:
        return
    _touch(snapshot)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(NAMES),
    st.lists(
        st.tuples(st.sampled_from(SUSPICIOUS), st.integers(0, 10**6)), min_size=1, max_size=40
    ),
)
def test_every_text_replaced(name: str, replacements: list[tuple[str, int]]) -> None:
    """Many element texts of one capture replaced at once, escaped so the XML stays valid."""
    data = CAPTURES[name]
    spans = _read_texts(data)
    chosen = {spans[position % len(spans)]: text for text, position in replacements}
    for span, text in sorted(chosen.items(), reverse=True):
        data = _replace(data, span, escape(text).encode())
    try:
        snapshot = parse_document(data)
    except BadCapture:
        return
    _touch(snapshot)


def _whole(data: bytes) -> Snapshot | None:
    """The snapshot of a parse of the whole document (nothing cut by lines or remembered),
    or None where parse_document must refuse it."""
    try:
        smi_xml._refuse_entities(data)
        root, gpus = smi_xml._parse_whole(data)
    except (BadCapture, ET.ParseError, LookupError, ValueError):
        return None
    return smi_xml._snapshot(root, gpus) if root.tag == "nvidia_smi_log" else None


@st.composite
def _versions(draw: st.DrawFn) -> list[bytes]:
    """Damaged versions of one capture, as the documents of a damaged recording."""
    name = draw(st.sampled_from(NAMES))
    return [CAPTURES[name], *draw(st.lists(damaged(name), min_size=1, max_size=4))]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_versions())
def test_split_documents_read_as_whole_ones(documents: list[bytes]) -> None:
    """Cutting children by their lines and remembering those read never changes a snapshot.

    Each document is read twice: the second time its children are remembered. Damage in a
    child that is not read may leave the document readable where a whole parse fails.
    """
    for data in documents * 2:
        reference = _whole(data)
        if reference is None:
            with contextlib.suppress(BadCapture):
                _touch(parse_document(data))
        else:
            assert parse_document(data) == reference


def _probe(path: Path) -> None:
    try:
        recording = Recording.open(path)
    except BadCapture:
        return
    with recording:
        count = len(recording)
        assert count >= 1
        for snapshot in recording:
            _touch(snapshot)
        for index in (0, count // 2, count - 1, -1, -count):
            with contextlib.suppress(BadCapture):
                _touch(recording.snapshot(index))
            stamp = recording.timestamp(index)
            assert stamp is None or isinstance(stamp, datetime)
        for index in (count, -count - 1):
            try:
                recording.snapshot(index)
            except IndexError:
                pass
            else:
                raise AssertionError(f"snapshot({index}) of {count} did not raise IndexError")
        found = recording.index_at(datetime(2020, 1, 1))
        assert 0 <= found < count
        assert all(isinstance(warning, str) for warning in recording.warnings)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(damaged(), min_size=1, max_size=4),
    st.lists(st.sampled_from([b"", b"\n", b"\r\n", b" \t "]), min_size=4, max_size=4),
    st.sampled_from(["plain", "gzip", "gzip-cut"]),
    st.integers(0, 2**32),
)
def test_recording_survives_damaged_streams(
    documents: list[bytes], separators: list[bytes], packing: str, seed: int
) -> None:
    data = b"".join(doc + sep for doc, sep in zip(documents, separators, strict=False))
    if packing != "plain":
        data = gzip.compress(data)
        if packing == "gzip-cut":
            data = data[: seed % (len(data) + 1)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("log.xml.gz" if packing != "plain" else "log.xml")
        path.write_bytes(data)
        _probe(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(NAMES), st.integers(0, 86400 * 400)), min_size=1, max_size=6
    ),
    st.sampled_from([b"", b"\n", b"\n\n"]),
)
def test_recording_finds_exactly_the_documents_written(
    documents: list[tuple[str, int]], separator: bytes
) -> None:
    """Undamaged streams: every document back, in order, each timestamp indexed."""
    start = datetime(2023, 1, 1)
    moments = [start + timedelta(seconds=offset) for _, offset in documents]
    blobs = []
    for (name, _), moment in zip(documents, moments, strict=True):
        stamp = moment.strftime("%a %b %d %H:%M:%S %Y").encode()
        blobs.append(
            re.sub(
                rb"<timestamp>[^<]*</timestamp>",
                b"<timestamp>" + stamp + b"</timestamp>",
                CAPTURES[name],
            )
        )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.xml"
        path.write_bytes(separator.join(blobs))
        with Recording.open(path) as recording:
            assert len(recording) == len(documents)
            assert [recording.timestamp(i) for i in range(len(documents))] == moments
            snapshots = list(recording)
            assert [s.timestamp for s in snapshots] == moments
            assert [len(s.gpus) for s in snapshots] == [
                CAPTURES[name].count(b"<gpu id=") for name, _ in documents
            ]
            latest = max(range(len(moments)), key=lambda i: (moments[i], i))
            assert recording.index_at(max(moments)) in [
                i for i, m in enumerate(moments) if m == max(moments)
            ]
            assert moments[recording.index_at(max(moments) + timedelta(days=1))] == moments[latest]
            assert recording.warnings == []


# --- every numeric field: a value in its range and unit, or None as invalid ------------

_MIB = 2**20
# (the units of the field, by factor to the model's unit; the largest physical value; whole)
_Kind = tuple[dict[str, int], float, bool]
_PERCENT: _Kind = ({"%": 1, "": 1}, 100.5, False)
_FAN: _Kind = ({"%": 1, "": 1}, 200.0, False)
_CELSIUS: _Kind = ({"C": 1, "": 1}, 200.0, False)
_WATTS: _Kind = ({"W": 1, "": 1}, 100_000.0, False)
_MHZ: _Kind = ({"MHz": 1, "": 1}, 100_000.0, True)
_SIZE: _Kind = ({"MiB": _MIB, "": _MIB, "KiB": 1024, "GiB": 2**30}, float(2**50), True)
_COUNT: _Kind = ({"": 1}, 1_000_000.0, True)

_V12 = "rtx3090x4-procs-v12.xml"
_MIG = "a100-sxm4-80gb-mig-v12.xml"
NUMERIC_FIELDS: dict[str, tuple[str, str, _Kind]] = {
    # field path: (capture, element under <gpu>, kind)
    "fan_speed": (_V12, "fan_speed", _FAN),
    "utilization.gpu": (_V12, "utilization/gpu_util", _PERCENT),
    "utilization.memory": (_V12, "utilization/memory_util", _PERCENT),
    "utilization.encoder": (_V12, "utilization/encoder_util", _PERCENT),
    "utilization.decoder": (_V12, "utilization/decoder_util", _PERCENT),
    "memory.total": (_V12, "fb_memory_usage/total", _SIZE),
    "memory.used": (_V12, "fb_memory_usage/used", _SIZE),
    "memory.free": (_V12, "fb_memory_usage/free", _SIZE),
    "memory.reserved": (_V12, "fb_memory_usage/reserved", _SIZE),
    "bar1.total": (_V12, "bar1_memory_usage/total", _SIZE),
    "bar1.used": (_V12, "bar1_memory_usage/used", _SIZE),
    "bar1.free": (_V12, "bar1_memory_usage/free", _SIZE),
    "temperature.gpu": (_V12, "temperature/gpu_temp", _CELSIUS),
    "temperature.memory": (_MIG, "temperature/memory_temp", _CELSIUS),
    "temperature.slowdown": (_V12, "temperature/gpu_temp_slow_threshold", _CELSIUS),
    "temperature.shutdown": (_V12, "temperature/gpu_temp_max_threshold", _CELSIUS),
    "temperature.max_operating": (_V12, "temperature/gpu_temp_max_gpu_threshold", _CELSIUS),
    "power.draw": (_V12, "gpu_power_readings/power_draw", _WATTS),
    "power.limit": (_V12, "gpu_power_readings/current_power_limit", _WATTS),
    "power.default_limit": (_V12, "gpu_power_readings/default_power_limit", _WATTS),
    "power.min_limit": (_V12, "gpu_power_readings/min_power_limit", _WATTS),
    "power.max_limit": (_V12, "gpu_power_readings/max_power_limit", _WATTS),
    "clocks.graphics": (_V12, "clocks/graphics_clock", _MHZ),
    "clocks.sm": (_V12, "clocks/sm_clock", _MHZ),
    "clocks.memory": (_V12, "clocks/mem_clock", _MHZ),
    "clocks.video": (_V12, "clocks/video_clock", _MHZ),
    "max_clocks.graphics": (_V12, "max_clocks/graphics_clock", _MHZ),
    "max_clocks.sm": (_V12, "max_clocks/sm_clock", _MHZ),
    "max_clocks.memory": (_V12, "max_clocks/mem_clock", _MHZ),
    "max_clocks.video": (_V12, "max_clocks/video_clock", _MHZ),
    "process.memory_used": (_V12, "processes/process_info/used_memory", _SIZE),
    "mig.sm_count": (
        _MIG,
        "mig_devices/mig_device/device_attributes/shared/multiprocessor_count",
        _COUNT,
    ),
    "mig.memory.total": (_MIG, "mig_devices/mig_device/fb_memory_usage/total", _SIZE),
    "mig.memory.used": (_MIG, "mig_devices/mig_device/fb_memory_usage/used", _SIZE),
    "mig.bar1.used": (_MIG, "mig_devices/mig_device/bar1_memory_usage/used", _SIZE),
}


def _field(gpu: GpuSample, path: str) -> tuple[object, Reason | None]:
    """The value of ``path`` read from the GPU, and the reason noted for it."""
    if path.startswith("process."):
        process = gpu.processes[0]
        return process.memory_used, None
    if path.startswith("mig."):
        device = gpu.mig_devices[0]
        rest = path.removeprefix("mig.")
        value: object = device
        for name in rest.split("."):
            value = getattr(value, name)
        return value, reason_for(device.unavailable, rest)
    value = gpu
    for name in path.split("."):
        value = getattr(value, name)
    return value, gpu.reason(path)


_MARK = "@@value@@"


@functools.cache
def _template(name: str, element: str) -> tuple[bytes, int]:
    """The capture with ``element`` of the first GPU that has it marked, and that GPU."""
    root = ET.fromstring(CAPTURES[name])
    for index, gpu in enumerate(root.iter("gpu")):
        node = gpu.find(element)
        if node is not None:
            node.text = _MARK
            return ET.tostring(root), index
    raise AssertionError(f"{name} has no {element}")


def _with_text(name: str, element: str, text: str) -> tuple[bytes, int]:
    """The capture with ``element`` of the first GPU that has it set to ``text``."""
    template, index = _template(name, element)
    return template.replace(_MARK.encode(), escape(text).encode()), index


_UNITS = ["%", "C", "W", "MHz", "MiB", "GiB", "KiB", "", "F", "e", "V", "TB"]
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.floats(min_value=-5, max_value=300).map(lambda x: f"{x:.2f}"),
    st.sampled_from(["1e308", "1e400", "-1e400", "-7", "-0", "-99999", "100.4", "100.6", "nan"]),
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(NUMERIC_FIELDS)), numbers, st.sampled_from(_UNITS))
def test_every_numeric_field_is_in_range_or_invalid(path: str, number: str, unit: str) -> None:
    """A number read is the number written, in the field's unit and physical range; any
    other reading is None with the reason "invalid value in the recording"."""
    name, element, (units, high, whole) = NUMERIC_FIELDS[path]
    data, index = _with_text(name, element, f"{number} {unit}".strip())
    value, reason = _field(parse_document(data).gpus[index], path)
    written = float(number) * units.get(unit, 0)
    if unit in units and 0 <= written <= high:
        assert (value, reason) == (int(written) if whole else written, None)
        assert not (isinstance(value, float) and str(value).startswith("-"))
    elif path == "process.memory_used":
        assert value is None  # a process keeps no reasons
    else:
        assert (value, reason) == (None, Reason.INVALID)
        assert Reason.INVALID.value == "invalid value in the recording"


@given(st.sampled_from(["", " ", "\n\t", "Pfoo", "P16", "p2x", "-1"]))
@settings(max_examples=20, deadline=None)
def test_a_performance_state_that_is_none_is_invalid(text: str) -> None:
    data, index = _with_text(_V12, "performance_state", text)
    gpu = parse_document(data).gpus[index]
    assert gpu.performance_state is None
    assert gpu.reason("performance_state") is Reason.INVALID
