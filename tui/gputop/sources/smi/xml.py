"""Parse one `nvidia-smi -q -x` document into a Snapshot.

The work is shared out: ``smi_blocks`` finds the children of each ``<gpu>`` from the bytes
(cutting those nothing reads and reusing those seen in an earlier document), ElementTree
parses what is left, ``smi_gpu`` turns each child into values and puts a GpuSample
together, ``smi_values`` reads numbers, sizes and flags. Documents ``smi_blocks`` cannot
split are parsed whole (``smi_prune``), to the same snapshot.

Hostile input: documents that declare entities are refused before parsing, expat never
fetches external entities, and the size of a document is bounded (see ``recording``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime
from xml.parsers import expat

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.model.health import HealthEvent, Kind, kind_event, xid_event
from gputop.sources.smi.blocks import parts, split
from gputop.sources.smi.gpu import Part, gpu_sample, parts_of
from gputop.sources.smi.prune import ROOT_TAG, compact, prune
from gputop.sources.smi.values import count

Element = ET.Element

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""A 16-GPU document with every supported clock listed is a few MB; more is not nvidia-smi."""


def parse_document(data: bytes) -> Snapshot:
    """Parse the bytes of one nvidia_smi_log document.

    Raises:
        BadCapture: the bytes are not one well-formed, safe nvidia_smi_log document.
    """
    if len(data) > MAX_DOCUMENT_BYTES:
        raise BadCapture(f"document larger than {MAX_DOCUMENT_BYTES // 2**20} MiB")
    if ROOT_TAG not in data:
        raise BadCapture("not an nvidia-smi XML document (no <nvidia_smi_log> element)")
    _refuse_entities(data)
    # Collection is the command line's to tune (``gputop.cli.startup``), not the reader's:
    # this runs on the poller thread while the UI thread allocates too.
    try:
        root, gpus = _parse(data)
        if root.tag != "nvidia_smi_log":
            raise BadCapture(f"XML, but not an nvidia-smi log (root element <{root.tag}>)")
        return _snapshot(root, gpus)
    except ET.ParseError as error:
        raise BadCapture(f"malformed XML: {error}") from None
    except (LookupError, ValueError) as error:
        # An XML declaration naming an unknown or multi-byte encoding.
        raise BadCapture(f"unreadable XML: {error}") from None


def _parse(data: bytes) -> tuple[Element, list[tuple[Element, dict[str, Part]]]]:
    """The document's root, and each ``<gpu>`` with the parts of its children that are read.

    Split by lines (``smi_blocks``), only the skeleton and the children not remembered are
    parsed; otherwise, or when the parsed skeleton disagrees with the lines, the whole
    document is.
    """
    root_at = data.find(ROOT_TAG)
    # Two roots are a cut-off document with the next one glued on: the whole parse fails.
    if data.find(ROOT_TAG, root_at + 1) < 0:
        found = split(data, root_at, _unambiguous(data, root_at))
        if found is not None:
            try:
                root = ET.fromstring(compact(found.skeleton))
            except ET.ParseError:
                pass  # the whole document's parse says where
            else:
                gpus = root.findall("gpu")
                converted = parts(found, gpus)
                if converted is not None:
                    return root, list(zip(gpus, converted, strict=True))
    return _parse_whole(data)


def _parse_whole(data: bytes) -> tuple[Element, list[tuple[Element, dict[str, Part]]]]:
    """``_parse`` without splitting: the document parsed whole, every child converted."""
    root = ET.fromstring(prune(data))
    return root, [(gpu, parts_of(gpu)) for gpu in root.iterfind("gpu")]


_UTF8 = re.compile(rb"""encoding\s*=\s*["']utf-?8["']""", re.IGNORECASE)


def _unambiguous(data: bytes, root_at: int) -> bool:
    """Whether the same bytes of a child of ``<gpu>`` mean the same in every document.

    Not so under another encoding, with a DTD of the document's own (which could give
    elements default attributes) or with namespaces declared on the root: the children of
    such documents are all parsed.
    """
    prolog = data[:root_at]
    if b"[" in prolog or (b"encoding" in prolog and _UTF8.search(prolog) is None):
        return False
    return data.find(b"xmlns", root_at, data.find(b">", root_at)) < 0


class _PrologDone(Exception):
    """Raised from expat's handler at the first element: the DTD, if any, is behind."""


def _entity_declared(*_: object) -> None:
    raise BadCapture("refusing XML that declares entities (possible entity-expansion bomb)")


def _refuse_entities(data: bytes) -> None:
    """Refuse a document whose DTD declares entities.

    Old drivers inline their DTD (element declarations only); entity declarations are what
    expansion bombs need, and nvidia-smi never writes one. Expat itself reads the prolog and
    reports every declaration, so no comment or string can hide one, and it stops at the
    first element: a few microseconds, where searching the whole document for "<!ENTITY"
    costs 4% of parsing.

    The documents of a recording all begin with the same bytes up to the end of their root's
    start tag, and what expat reads up to there depends on nothing after it (a DTD cannot
    follow an element): a document beginning as one already found safe is safe.
    """
    for head in _SAFE_HEADS:
        if data.startswith(head):
            return
    parser = expat.ParserCreate()
    parser.EntityDeclHandler = _entity_declared
    parser.UnparsedEntityDeclHandler = _entity_declared
    starts: list[int] = []

    def element_reached(*_: object) -> None:
        starts.append(parser.CurrentByteIndex)
        raise _PrologDone

    parser.StartElementHandler = element_reached
    try:
        parser.Parse(data, True)
    except _PrologDone:
        # Stopped, expat stands at the end of that first start tag.
        end = parser.CurrentByteIndex
        if starts and 0 <= starts[0] < end <= _SAFE_HEAD_BYTES:
            head = data[:end]
            if head[starts[0] : starts[0] + 1] == b"<" and head.endswith(b">"):
                if len(_SAFE_HEADS) >= _SAFE_HEADS_KEPT:
                    del _SAFE_HEADS[0]
                _SAFE_HEADS.append(head)
    except (expat.ExpatError, LookupError, ValueError):
        return  # not well-formed (or an unknown encoding): ElementTree says how


_SAFE_HEADS: list[bytes] = []
"""Beginnings of documents, to the end of their first start tag, found to declare no entity."""
_SAFE_HEADS_KEPT = 8
_SAFE_HEAD_BYTES = 65536


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
            except (ValueError, OverflowError):  # a year of 15 digits overflows a C int
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


def recorded_events(node: Element | None) -> tuple[HealthEvent, ...]:
    """The health events gputop's `--record` wrote with a document (an element of its
    own, after the GPUs); an event it cannot read is left out."""
    if node is None:
        return ()
    events = []
    for item in node.iterfind("event"):
        gpu = count(item.findtext("gpu"))
        kind = _KINDS.get((item.findtext("kind") or "").strip())
        try:
            moment = datetime.fromisoformat((item.findtext("time") or "").strip())
        except ValueError:
            continue
        if gpu is None or kind is None:
            continue
        uuid = (item.findtext("uuid") or "").strip() or None
        gi = count(item.findtext("gpu_instance_id"))
        ci = count(item.findtext("compute_instance_id"))
        if kind is Kind.XID:
            code = count(item.findtext("xid"))
            if code is not None:
                events.append(
                    xid_event(
                        moment, gpu, code, uuid=uuid, gpu_instance_id=gi, compute_instance_id=ci
                    )
                )
        else:
            events.append(
                kind_event(moment, gpu, kind, uuid=uuid, gpu_instance_id=gi, compute_instance_id=ci)
            )
    return tuple(events)


_KINDS = {kind.name.lower(): kind for kind in Kind}


def _snapshot(root: Element, gpus: list[tuple[Element, dict[str, Part]]]) -> Snapshot:
    cuda = (root.findtext("cuda_version") or "").strip()
    driver = (root.findtext("driver_version") or "").strip()
    return Snapshot(
        timestamp=parse_timestamp(root.findtext("timestamp")),
        gpus=tuple(
            gpu_sample(index, gpu.get("id"), converted)
            for index, (gpu, converted) in enumerate(gpus)
        ),
        driver_version=driver or None,
        cuda_version=None if cuda.lower() in ("", "not found", "n/a") else cuda,
        attached_gpus=count(root.findtext("attached_gpus")),
        events=recorded_events(root.find("gputop_health_events")),
    )
