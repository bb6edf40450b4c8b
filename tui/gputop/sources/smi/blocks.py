"""Split an nvidia-smi XML document into the children of its ``<gpu>`` elements.

Parsing is what replay costs: expat and the tree builder pay for every element, and
turning elements into values costs as much again. Most of it is spared from the bytes,
before anything is parsed:

- Children of ``<gpu>`` that the reader does not use (supported clock lists, board and
  firmware details, accounting, encoder statistics) are most of a document's bytes and half
  of its elements: they are cut out. Of ``<pci>``, only the ``<pci_bus_id>`` line is kept.
- In a recording (``nvidia-smi -q -x -l 1``) most of the children that are used come back
  byte for byte every second: a GPU's name, UUID, PCI address, ECC counters, maximum clocks,
  and every reading that did not move. Each is parsed and converted once, and its part
  (``smi_gpu.Part``, immutable) is remembered by the child's bytes for the next document.
- Where each child of a ``<gpu>`` starts and whether it is read is worked out once, and
  again only for the lines that changed since the last document with that ``<gpu>``.

nvidia-smi puts each child of ``<gpu>`` on its own line at one indentation, so the children
are found by that line prefix (``\n\t\t<``): each runs from one to the next, with the
lines that start with an end tag. A child that is cut must be one whole element (its bytes
end with its own end tag, or it is one empty-element tag), a child that is remembered was
one whole element when it was parsed, and the rest of the document (the prolog, the root,
the ``<gpu>`` tags and the children not remembered) is parsed as XML every time; the parsed
``<gpu>`` elements must hold exactly the children expected, by name and in order. A document
laid out otherwise, or whose parse disagrees with its lines, is parsed whole (after the
name-by-name cut of ``smi_prune``), so the reader gives the same snapshot either way; tests
hold it to that on damaged captures. What is not parsed is not checked either: damage
inside a child that is not read (or in ``<pci>`` besides its bus ID) no longer makes the
document unreadable.

Memory stays bounded: at most ``_MEMO_ENTRIES`` parts of children of at most
``_MEMO_BYTES`` bytes, in two generations (a full young one becomes the old one, and what
is used from the old one moves back), so the children that recur stay and one-off ones go;
and the lines of the last document of at most ``_LAYOUTS_KEPT`` ``<gpu>`` elements.
Threads may parse at once: a lost update costs only a parse.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import compress
from operator import ne
from typing import NamedTuple

from gputop.sources.smi.gpu import CONVERTERS, Part

Element = ET.Element

_MEMO_ENTRIES = 1024
_MEMO_BYTES = 16384
_WHITE = b" \t\r\n"
_TAGS = {tag.encode(): tag for tag in CONVERTERS}
"""The children of ``<gpu>`` that are read; every other one is cut."""


Child = tuple[str, bytes, "Part | None"]
"""A child of ``<gpu>`` that is read: its tag, its bytes less the line prefix (what its part
is remembered by) and its part when remembered (else it is parsed)."""


class Split(NamedTuple):
    """A document with the children of its ``<gpu>`` elements taken out."""

    skeleton: bytes
    """The document without the children that are cut or remembered: what is parsed."""
    gpus: list[list[Child]]
    """Per ``<gpu>``, in document order, its children that are read, in document order."""
    remember: bool
    """Whether the parts of the children parsed now may be remembered."""


class _Memo:
    """Parts by the bytes of the children they were converted from, in two generations."""

    def __init__(self) -> None:
        self.young: dict[bytes, Part] = {}
        self.old: dict[bytes, Part] = {}

    def old_get(self, key: bytes) -> Part | None:
        """A part of the old generation, moved back to the young one."""
        part = self.old.get(key)
        if part is not None:
            self.put(key, part)
        return part

    def put(self, key: bytes, part: Part) -> None:
        if len(self.young) >= _MEMO_ENTRIES:
            self.old = self.young
            self.young = {}
        self.young[key] = part

    def clear(self) -> None:
        self.young = {}
        self.old = {}


MEMO = _Memo()


def split(data: bytes, root_at: int, remember: bool) -> Split | None:
    """The children of each ``<gpu>`` of ``data``, or None when the layout does not allow.

    ``root_at`` is where ``<nvidia_smi_log`` starts. With ``remember`` False, every child
    that is read is parsed (the document's encoding or DTD could make the same bytes mean
    something else).
    """
    find = data.find
    young = MEMO.young.get if remember else _nothing
    old = MEMO.old_get if remember else _nothing
    pieces: list[bytes] = []
    gpus: list[list[Child]] = []
    keep_from = 0
    position = root_at
    marker = b""
    while True:
        gpu_at = find(b"<gpu ", position)
        if gpu_at < 0:
            break
        content = find(b">", gpu_at) + 1
        gpu_end = find(b"</gpu>", content)
        if content == 0 or gpu_end < 0 or data[content - 2] == 47:  # <gpu .../>
            return None
        if find(b"xmlns", gpu_at, content) >= 0:
            return None  # a namespace would change what the same bytes of a child mean
        if not marker:
            # The first child's line gives the line prefix of every child.
            line = find(b"\n", content, gpu_end)
            first = find(b"<", content, gpu_end)
            if line < 0 or first < 0 or data[line + 1 : first].strip(b" \t"):
                return None
            marker = data[line:first] + b"<"
        pieces.append(data[keep_from:content])
        lines = data[content:gpu_end].split(marker)
        if lines[0].strip(_WHITE):
            return None  # text, or a child not on a line of its own
        known = remember and gpu_end - content <= _LAYOUT_BYTES
        spans = _spans(lines, marker, (data[gpu_at:content], len(lines)) if known else None)
        if spans is None:
            return None
        children: list[Child] = []
        for _, _, tag, key in spans:
            if tag is not None:
                part = young(key)
                if part is None:
                    part = old(key)
                    if part is None:
                        pieces.append(marker)
                        pieces.append(key)
                children.append((tag, key, part))
        gpus.append(children)
        keep_from = gpu_end
        position = gpu_end + 6
    if not gpus:
        return None
    pieces.append(data[keep_from:])
    return Split(b"".join(pieces), gpus, remember)


Span = tuple[int, int, "str | None", bytes]
"""Lines ``[first, stop)`` of a ``<gpu>``'s content: one child that is read (its tag and its
bytes) or children that are cut (None, and no bytes)."""


class _Layout(NamedTuple):
    """How the content of one ``<gpu>`` was cut into children in the last document."""

    marker: bytes
    lines: list[bytes]
    spans: list[Span]
    owners: list[int]
    """For each line, the index of its span."""


_LAYOUTS: dict[tuple[bytes, int], _Layout] = {}
_LAYOUTS_KEPT = 64
_LAYOUT_BYTES = 1 << 20


def _spans(lines: list[bytes], marker: bytes, gpu: tuple[bytes, int] | None) -> list[Span] | None:
    """The children of a ``<gpu>`` whose content, cut at the line prefix, is ``lines``.

    ``gpu`` (its start tag and line count) names the ``<gpu>`` across documents: the lines
    that did not change since the last document with that ``<gpu>`` are not looked at again.
    None if a child that is cut is not a whole element.
    """
    if gpu is None:
        return _classify(lines, 1, len(lines), marker)
    layout = _LAYOUTS.get(gpu)
    if layout is not None and layout.marker == marker:
        spans = _respan(lines, marker, layout)
        if spans is not None:
            _LAYOUTS[gpu] = _Layout(marker, lines, spans, layout.owners)
            return spans
    spans = _classify(lines, 1, len(lines), marker)
    if spans is not None:
        if len(_LAYOUTS) >= _LAYOUTS_KEPT and gpu not in _LAYOUTS:
            _LAYOUTS.clear()
        owners = [-1] * len(lines)  # line 0, before the first child, is white space
        for number, (first, stop, _, _) in enumerate(spans):
            owners[first:stop] = [number] * (stop - first)
        _LAYOUTS[gpu] = _Layout(marker, lines, spans, owners)
    return spans


def _respan(lines: list[bytes], marker: bytes, layout: _Layout) -> list[Span] | None:
    """The spans of ``layout`` again, those with a changed line looked at anew (the same
    list when nothing changed); None when a change moved a child (then every line is)."""
    # Which lines changed, found in C: most do not, from one second to the next.
    changed = list(compress(range(len(lines)), map(ne, lines, layout.lines)))
    if not changed:
        return layout.spans
    owners = layout.owners
    spans = list(layout.spans)
    for number in sorted({owners[line] for line in changed}):
        if number < 0:
            continue  # white space before the first child
        first, stop, tag, _ = spans[number]
        redone = _classify(lines, first, stop, marker)
        if redone is None:
            return None
        if tag is None:
            if any(cut[2] is not None for cut in redone):
                return None
        elif len(redone) != 1 or redone[0][2] != tag:
            return None
        else:
            spans[number] = redone[0]
    return spans


def _classify(lines: list[bytes], start: int, end: int, marker: bytes) -> list[Span] | None:
    """The spans of ``lines[start:end]``, child by child; None if a child that is cut is
    not a whole element."""
    tags = _TAGS
    spans: list[Span] = []
    cut_from = -1
    index = start
    while index < end:
        first = index
        line = lines[index]
        if line[:1] == b"/":
            return None  # an end tag where a child should start
        index += 1
        if index < end and lines[index][:1] == b"/":
            # Lines starting with an end tag close the child that began on this one.
            last = index + 1
            while last < end and lines[last][:1] == b"/":
                last += 1
            line = marker.join(lines[first:last])
            index = last
        name = line[: line.find(b">")]
        tag = tags.get(name)
        if tag is None and name.endswith(b"/"):
            tag = tags.get(name[:-1].rstrip())  # <processes /> or <processes/>
        if tag is not None:
            if cut_from >= 0:
                spans.append((cut_from, first, None, b""))
                cut_from = -1
            if tag == "pci" and index - first > 1:
                line = _bus_id_only(line, marker)
            spans.append((first, index, tag, line))
        elif not line.endswith(b"</" + name + b">") and not _whole_element(line, name):
            return None
        elif cut_from < 0:
            cut_from = first
    if cut_from >= 0:
        spans.append((cut_from, end, None, b""))
    return spans


def _bus_id_only(pci: bytes, marker: bytes) -> bytes:
    """``<pci>`` (less its "<") with only its ``<pci_bus_id>`` line, the one child read.

    A ``<pci>`` also holds link widths and PCIe throughput, which change every second: the
    bus ID alone is parsed and remembered. ``pci`` as it is when the bus ID is not on a line
    of its own at the next indentation.
    """
    whole = len(pci.rstrip(_WHITE))
    if pci.find(b"</pci>") != whole - 6 or not pci.startswith(marker[:-1], whole - len(marker) - 5):
        return pci  # not one element ending on a line of its own
    line = pci.find(b"\n")
    nested = pci[line : pci.find(b"<", line)]
    if line < 0 or len(nested) <= len(marker) - 1 or not nested.startswith(marker[:-1]):
        return pci
    at = pci.find(nested + b"<pci_bus_id>")
    end = pci.find(b"\n", at + 1)
    if at < 0 or end < 0 or pci.find(b"<pci_bus_id", 0, at) >= 0:
        return pci  # absent, last, or not the first one
    if not pci.endswith(b"</pci_bus_id>", at, end - 1 if pci[end - 1] == 13 else end):
        return pci
    # It is a child of <pci> if all before it are whole elements, one a line (pci_bus,
    # pci_device, ... in every schema): each line a start tag and then an end tag.
    before = pci[line:at]
    lines = before.count(nested + b"<")
    if (
        pci[4:line].strip(_WHITE)
        or before.count(b"<") != 2 * lines
        or before.count(b"</") != lines
        or nested + b"</" in before
        or b"/>" in before
    ):
        return pci
    return b"pci>" + pci[at:end] + marker[:-1] + b"</pci>"


def _nothing(key: bytes) -> None:
    return None


def _whole_element(line: bytes, name: bytes) -> bool:
    """Whether ``line`` (a child's bytes less their "<") is the element ``name`` alone."""
    line = line.rstrip(_WHITE)
    if name.endswith(b"/"):  # <name/>
        return line.find(b"<") < 0
    return line.endswith(b"</" + name + b">")


def parts(found: Split, gpus: list[Element]) -> list[dict[str, Part]] | None:
    """The parts of each ``<gpu>``'s children that are read, remembered or converted now.

    ``gpus`` are the ``<gpu>`` elements parsed from ``found.skeleton``. None when they do
    not hold exactly the children that were not remembered, by name and in order (a layout
    that lies about the structure): then the document must be parsed whole.
    """
    if len(gpus) != len(found.gpus):
        return None
    result: list[dict[str, Part]] = []
    learned: list[tuple[bytes, Part]] = []
    for gpu, children in zip(gpus, found.gpus, strict=True):
        parsed = iter(gpu)
        by_tag: dict[str, Part] = {}
        for tag, key, part in children:
            if part is None:
                element = next(parsed, None)
                if element is None or element.tag != tag:
                    return None
                part = CONVERTERS[tag](element)
                if found.remember and len(key) <= _MEMO_BYTES:
                    learned.append((key, part))
            if tag not in by_tag:  # the first of duplicates, as find() picks
                by_tag[tag] = part
        if next(parsed, None) is not None:
            return None
        result.append(by_tag)
    for key, part in learned:
        MEMO.put(key, part)
    return result
