"""MIG layout as a tree: GPU → GPU instance → compute instance (and its pods) → processes.

``mig_outline`` turns a snapshot into plain nodes (no Textual); ``MigTree`` keeps a Textual
``Tree`` in line with the outline by node key, so nodes a user expanded or collapsed, and the
cursor, stay as they were when the next snapshot arrives.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Reason, Snapshot, reason_for
from gputop.model.units import NA, fmt_bytes, fmt_memory_pair, fmt_percent, fmt_text
from gputop.ui.render.gauges import short_name
from gputop.ui.render.owners import Holder, device_holders, holder_of, holders_text
from gputop.ui.render.panel_lines import device_processes
from gputop.ui.render.process_rows import command_text, user_text
from gputop.ui.widget_css import css_beside

NodeKey = tuple[object, ...]
"""("gpu", i), ("gi", i, gi), ("ci", i, gi, ci), ("ci", i, gi, ci, "proc", pid), ("note", ...)."""

_SEP = " · "
ELLIPSIS = "…"
MIN_CUT = 8
"""Fewest cells a command is cut to; with less room it is left out whole."""


@dataclass(frozen=True, slots=True)
class MigStyles:
    """Rich styles for the parts of labels; plain by default (tests read ``.plain``)."""

    title: Style = field(default_factory=Style)
    note: Style = field(default_factory=Style)
    derived: Style = field(default_factory=Style)


@dataclass(frozen=True, slots=True)
class Piece:
    """One part of a label, with what it may become on a line too short for it."""

    text: Text
    short: Text | None = None
    """A shorter wording, taken first when the line is too long."""
    keep: int = 0
    """How long it stays when parts must go: 0 words, 1 counts (SMs, instances, processes),
    2 what changes (memory and utilization), 3 who holds it (an instance's pods)."""
    cut: bool = False
    """May be cut at a word (a command line) rather than left out whole."""


@dataclass(frozen=True, slots=True)
class MigNode:
    """One line of the tree before it is a widget node."""

    key: NodeKey
    label: Text
    children: tuple[MigNode, ...] = ()
    leaf: bool = False
    """Cannot expand (a process, or a note)."""
    head: Text | None = None
    """The label's first part (what the node is), when it is made of pieces."""
    pieces: tuple[Piece, ...] = ()

    def fitted(self, width: int, styles: MigStyles) -> Text:
        """The label in ``width`` cells (see ``fit_label``)."""
        if self.head is None:
            return _cut_text(self.label, width)
        return fit_label(self.head, self.pieces, width, styles)


def _joined(head: Text, pieces: Iterable[Text], styles: MigStyles) -> Text:
    text = head.copy()
    for piece in pieces:
        text.append(_SEP, style=styles.note)
        text.append_text(piece)
    return text


def _cut_text(text: Text, width: int) -> Text:
    """``text`` cut after its last whole word that fits, ending in an ellipsis."""
    if text.cell_len <= width:
        return text
    plain = text.plain
    keep = plain[: max(0, width - 1)]
    if " " in keep.strip():
        keep = keep[: keep.rstrip().rfind(" ")].rstrip(" ·:;,(")
    cut = text[: len(keep)]
    cut.append(ELLIPSIS)
    return cut


def fit_label(head: Text, pieces: Sequence[Piece], width: int, styles: MigStyles) -> Text:
    """``head · piece · …`` in ``width`` cells; every cut says so with an ellipsis.

    In turn, until it fits: the shorter wordings; a command cut at a word; then whole pieces
    left out, those without a value first, memory and utilization last (from the right
    among equals). A value is never cut in half: it is there whole, or left out and the
    line ends in "…".
    """
    texts = [piece.text for piece in pieces]
    line = _joined(head, texts, styles)
    if line.cell_len <= width:
        return line
    texts = [piece.short or piece.text for piece in pieces]
    line = _joined(head, texts, styles)
    if line.cell_len <= width:
        return line
    last = len(pieces) - 1
    if pieces and pieces[last].cut:
        room = width - _joined(head, texts[:last], styles).cell_len - len(_SEP)
        if room >= MIN_CUT:
            return _joined(head, [*texts[:last], _cut_text(texts[last], room)], styles)
    kept = list(range(len(pieces)))
    marker = Text(ELLIPSIS, style=styles.note)
    for index in sorted(kept, key=lambda i: (pieces[i].keep, -i)):
        kept.remove(index)
        line = _joined(head, [*(texts[i] for i in kept), marker], styles)
        if line.cell_len <= width:
            return line
    return _cut_text(_joined(head, [marker], styles), width)


def _util(value: float | None, reason: Reason | None, styles: MigStyles) -> Piece:
    if value is not None:
        return Piece(Text(f"util {fmt_percent(value)}"), keep=2)
    note = f"util: {reason.value if reason is not None else NA}"
    # Not a number, but what utilization is: it stays as long as a value would.
    return Piece(Text(note, style=styles.note), Text(f"util {NA}", style=styles.note), keep=2)


def _memory(used: int | None, total: int | None) -> Piece:
    # One unit for the GPU and its instances alike: 0.59/9.75GiB beside 9.77/79.65GiB.
    amount = fmt_memory_pair(used, total)
    return Piece(Text(f"memory {amount}"), Text(f"mem {amount}"), keep=2)


def _sms(count: int | None) -> Piece:
    return Piece(Text(f"{NA if count is None else count} SMs"), keep=1)


def _count(count: int, one: str, many: str, short: str) -> Piece:
    return Piece(Text(f"{count} {one if count == 1 else many}"), Text(f"{count} {short}"), keep=1)


def _node(
    key: NodeKey,
    head: str,
    head_style: Style,
    pieces: Iterable[Piece],
    styles: MigStyles,
    children: tuple[MigNode, ...] = (),
    leaf: bool = False,
) -> MigNode:
    # Text(head, style=...) would style everything appended later too.
    title = Text()
    title.append(head, style=head_style)
    parts = tuple(pieces)
    label = _joined(title, (piece.text for piece in parts), styles)
    return MigNode(key, label, children, leaf, title, parts)


def _holders_piece(holders: Sequence[Holder]) -> Piece:
    """The pods (jobs, containers) on an instance; how many, when room is short."""
    if len(holders) == 1:
        return Piece(Text(holders_text(holders)), keep=3)
    return Piece(Text(holders_text(holders)), Text(f"{len(holders)} pods"), keep=3)


def _process_node(
    key: NodeKey, process: ProcessSample, styles: MigStyles, holder: bool = False
) -> MigNode:
    """A process's line; with ``holder``, its pod too (when the instance has several)."""
    found = holder_of(process.owner) if holder else None
    pieces = [
        Piece(Text(user_text(process), style=styles.note if process.foreign else Style())),
        *([Piece(Text(found.describe()), Text(found.name), keep=1)] if found else []),
        Piece(Text(fmt_text(process.type))),
        Piece(Text(fmt_bytes(process.memory_used)), keep=2),
        Piece(Text(command_text(process)), cut=True),
    ]
    return _node(key, f"PID {process.pid}", Style(), pieces, styles, leaf=True)


def _compute_instance(gpu: GpuSample, device: MigDeviceSample, styles: MigStyles) -> MigNode:
    key: NodeKey = ("ci", gpu.index, device.gpu_instance_id, device.compute_instance_id)
    processes = device_processes(gpu, device)
    number = NA if device.index is None else device.index
    pieces = [
        Piece(Text(f"MIG device {number}"), Text(f"dev {number}")),
        _sms(device.sm_count),
        _util(device.utilization.gpu, reason_for(device.unavailable, "utilization.gpu"), styles),
        _count(len(processes), "process", "processes", "procs"),
    ]
    holders = device_holders(device, (process.owner for process in processes))
    if holders:
        pieces.append(_holders_piece(holders))
    several = len(holders) > 1
    children = tuple(
        _process_node((*key, "proc", p.pid), p, styles, holder=several) for p in processes
    )
    ci = NA if device.compute_instance_id is None else str(device.compute_instance_id)
    return _node(key, f"CI {ci}", styles.title, pieces, styles, children, leaf=not children)


def _gpu_instance(
    gpu: GpuSample, gi: int | None, devices: Sequence[MigDeviceSample], styles: MigStyles
) -> MigNode:
    first = devices[0]
    profile = Text(first.profile or f"profile {NA}")
    if first.profile is not None and first.profile_derived:
        source = " (from the device name)" if first.profile_from_name else " (derived)"
        profile.append(source, style=styles.derived)
    # Compute instances share their GPU instance's memory but each has its own SMs.
    sm_counts = [device.sm_count for device in devices]
    sms = None if None in sm_counts else sum(count for count in sm_counts if count is not None)
    pieces = [
        Piece(profile, Text(first.profile or f"profile {NA}")),
        _sms(sms),
        _memory(first.memory.used, first.memory.total),
    ]
    children = tuple(_compute_instance(gpu, device, styles) for device in devices)
    head = f"GI {NA if gi is None else gi}"
    return _node(("gi", gpu.index, gi), head, styles.title, pieces, styles, children)


def _gpu_node(gpu: GpuSample, styles: MigStyles) -> MigNode:
    head = f"GPU {gpu.index}"
    name = fmt_text(gpu.name)
    if not gpu.mig_mode:
        reason = gpu.reason("mig_mode")
        state = (
            "MIG off" if gpu.mig_mode is False else f"MIG: {(reason or Reason.NOT_AVAILABLE).value}"
        )
        off = (Piece(Text(name), Text(short_name(gpu.name))), Piece(Text(state, style=styles.note)))
        return _node(("gpu", gpu.index), head, styles.title, off, styles, leaf=True)
    groups: dict[int | None, list[MigDeviceSample]] = {}
    for device in gpu.mig_devices:
        groups.setdefault(device.gpu_instance_id, []).append(device)
    order = sorted(groups, key=lambda gi: -1 if gi is None else gi)
    children: tuple[MigNode, ...] = tuple(
        _gpu_instance(
            gpu,
            gi,
            sorted(
                groups[gi],
                key=lambda d: -1 if d.compute_instance_id is None else d.compute_instance_id,
            ),
            styles,
        )
        for gi in order
    )
    if not children:
        note = Text("no GPU instances created", style=styles.note)
        children = (MigNode(("note", gpu.index), note, leaf=True),)
    pieces = [
        Piece(Text(name), Text(short_name(gpu.name))),
        _count(len(order), "GPU instance", "GPU instances", "GIs"),
        _memory(gpu.memory.used, gpu.memory.total),
        _util(gpu.utilization.gpu, gpu.reason("utilization.gpu"), styles),
    ]
    return _node(("gpu", gpu.index), head, styles.title, pieces, styles, children)


def mig_outline(snapshot: Snapshot | None, styles: MigStyles | None = None) -> list[MigNode]:
    """The tree for ``snapshot``: MIG GPUs in full, other GPUs as a one-line note each."""
    styles = styles or MigStyles()
    if snapshot is None or not snapshot.gpus:
        return [MigNode(("note",), Text("no GPUs", style=styles.note), leaf=True)]
    return [_gpu_node(gpu, styles) for gpu in snapshot.gpus]


class MigTree(Tree[NodeKey]):
    """The MIG layout of the latest snapshot; expansion and cursor survive refreshes."""

    DEFAULT_CSS = css_beside(__file__)

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *Tree.COMPONENT_CLASSES,
        "mig-tree--title",
        "mig-tree--note",
        "mig-tree--derived",
    }

    def __init__(
        self,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """An empty tree; ``show`` fills it."""
        super().__init__("MIG", name=name, id=id, classes=classes, disabled=disabled)
        self.show_root = False
        self._snapshot: Snapshot | None = None
        self._outline: dict[NodeKey, tuple[MigNode, int]] = {}
        """Each shown node's outline node and depth, to fit its label when it is drawn."""
        self._label_styles = MigStyles()

    def on_mount(self) -> None:
        """Render whatever was shown before mounting; follow theme changes."""
        self._refresh_labels()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._refresh_labels())

    def _refresh_labels(self) -> None:
        # Labels carry colours resolved from the current theme, so a new theme means new labels.
        styles = self._label_styles = self._styles()
        self._outline = {}
        self._sync(self.root, mig_outline(self._snapshot, styles), styles, 0)

    def render_label(self, node: TreeNode[NodeKey], base_style: Style, style: Style) -> Text:
        """The label fitted to the width the tree has now.

        Labels are fitted when set, but a tree shown for the first time is drawn once
        before it learns its width: without this, that frame ran past the edge.
        """
        text = super().render_label(node, base_style, style)
        found = self._outline.get(node.data) if node.data is not None else None
        if found is None or self.scrollable_content_region.width <= 0:
            return text
        outline, depth = found
        room = self._label_room(depth, outline.leaf)
        shown = cell_len(str(node.label))
        if shown <= room:
            return text
        fitted = outline.fitted(room, self._label_styles)
        fitted.stylize(style)
        return Text.assemble(text[: text.cell_len - shown], fitted)

    def on_resize(self) -> None:
        """Fit the labels to the new width."""
        self._refresh_labels()

    def _label_room(self, depth: int, leaf: bool) -> int:
        """Cells a label has at ``depth``: the width less the guides and the expand icon."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return 10**6  # not laid out yet: the whole label, fitted once there is a width
        icon = 0 if leaf else cell_len(self.ICON_NODE_EXPANDED)
        return max(1, width - depth * self.guide_depth - icon)

    def show(self, snapshot: Snapshot) -> None:
        """Display the MIG layout of ``snapshot``."""
        self._snapshot = snapshot
        if self.is_mounted:
            self._refresh_labels()

    def _styles(self) -> MigStyles:
        def foreground(name: str) -> Style:
            # Only colour and emphasis: a background would paint over the cursor line.
            style = self.get_component_rich_style(name)
            return Style(color=style.color, bold=style.bold, italic=style.italic)

        return MigStyles(
            title=foreground("mig-tree--title"),
            note=foreground("mig-tree--note"),
            derived=foreground("mig-tree--derived"),
        )

    def _sync(
        self, parent: TreeNode[NodeKey], wanted: Sequence[MigNode], styles: MigStyles, depth: int
    ) -> None:
        keys = {node.key for node in wanted}
        existing: dict[NodeKey, TreeNode[NodeKey]] = {}
        for child in list(parent.children):
            if child.data in keys:
                assert child.data is not None
                existing[child.data] = child
            else:
                child.remove()
        for position, node in enumerate(wanted):
            found = existing.get(node.key)
            self._outline[node.key] = (node, depth)
            label = node.fitted(self._label_room(depth, node.leaf), styles)
            if found is None:
                before = position if position < len(parent.children) else None
                # New nodes arrive open; nodes already there keep what the user made of them.
                child = parent.add(
                    label,
                    node.key,
                    before=before,
                    expand=not node.leaf,
                    allow_expand=not node.leaf,
                )
            else:
                child = found
                if child.label != label:
                    child.set_label(label)
                if child.allow_expand == node.leaf:
                    child.allow_expand = not node.leaf
                    if not node.leaf:
                        child.expand()
            self._sync(child, node.children, styles, depth + 1)
