"""MIG layout as a tree: GPU → GPU instance → compute instance → processes.

``mig_outline`` turns a snapshot into plain nodes (no Textual); ``MigTree`` keeps a Textual
``Tree`` in line with the outline by node key, so nodes a user expanded or collapsed, and the
cursor, stay as they were when the next snapshot arrives.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Reason, Snapshot, reason_for
from gputop.model.units import NA, fmt_bytes, fmt_percent, fmt_text, fmt_used_of
from gputop.ui.render.process_rows import command_text, user_text
from gputop.ui.widget_css import css_beside

NodeKey = tuple[object, ...]
"""("gpu", i), ("gi", i, gi), ("ci", i, gi, ci), ("ci", i, gi, ci, "proc", pid), ("note", ...)."""

_SEP = " · "


@dataclass(frozen=True, slots=True)
class MigStyles:
    """Rich styles for the parts of labels; plain by default (tests read ``.plain``)."""

    title: Style = field(default_factory=Style)
    note: Style = field(default_factory=Style)
    derived: Style = field(default_factory=Style)


@dataclass(frozen=True, slots=True)
class MigNode:
    """One line of the tree before it is a widget node."""

    key: NodeKey
    label: Text
    children: tuple[MigNode, ...] = ()
    leaf: bool = False
    """Cannot expand (a process, or a note)."""


def _util(value: float | None, reason: Reason | None, styles: MigStyles) -> Text:
    if value is not None:
        return Text(f"util {fmt_percent(value)}")
    return Text(f"util: {reason.value if reason is not None else NA}", style=styles.note)


def _memory(used: int | None, total: int | None) -> str:
    # One unit for the GPU and its instances alike: 0.59/9.75GiB beside 9.77/79.65GiB.
    if used is not None and total is not None:
        return f"memory {fmt_used_of(used, total)}"
    return f"memory {fmt_bytes(used)} / {fmt_bytes(total)}"


def _sms(count: int | None) -> str:
    return f"{NA if count is None else count} SMs"


def _label(head: str, parts: Iterable[str | Text], head_style: Style, styles: MigStyles) -> Text:
    # Text(head, style=...) would style everything appended later too.
    text = Text()
    text.append(head, style=head_style)
    for part in parts:
        text.append(_SEP, style=styles.note)
        text.append(part if isinstance(part, Text) else Text(part))
    return text


def _process_node(key: NodeKey, process: ProcessSample, styles: MigStyles) -> MigNode:
    parts: list[str | Text] = [
        Text(user_text(process), style=styles.note if process.foreign else Style()),
        fmt_text(process.type),
        fmt_bytes(process.memory_used),
        command_text(process),
    ]
    return MigNode(key, _label(f"PID {process.pid}", parts, Style(), styles), leaf=True)


def _device_processes(gpu: GpuSample, device: MigDeviceSample) -> list[ProcessSample]:
    """The device's processes; also the GPU's own list where a source files them only there."""
    found = {process.pid: process for process in device.processes}
    for process in gpu.processes:
        if (
            process.gpu_instance_id == device.gpu_instance_id
            and process.compute_instance_id in (None, device.compute_instance_id)
            and process.pid not in found
        ):
            found[process.pid] = process
    return sorted(found.values(), key=lambda process: process.pid)


def _compute_instance(gpu: GpuSample, device: MigDeviceSample, styles: MigStyles) -> MigNode:
    key: NodeKey = ("ci", gpu.index, device.gpu_instance_id, device.compute_instance_id)
    processes = _device_processes(gpu, device)
    parts: list[str | Text] = [
        f"MIG device {NA if device.index is None else device.index}",
        _sms(device.sm_count),
        _util(device.utilization.gpu, reason_for(device.unavailable, "utilization.gpu"), styles),
        f"{len(processes)} process{'' if len(processes) == 1 else 'es'}",
    ]
    children = tuple(_process_node((*key, "proc", p.pid), p, styles) for p in processes)
    ci = NA if device.compute_instance_id is None else str(device.compute_instance_id)
    label = _label(f"CI {ci}", parts, styles.title, styles)
    return MigNode(key, label, children, leaf=not children)


def _gpu_instance(
    gpu: GpuSample, gi: int | None, devices: Sequence[MigDeviceSample], styles: MigStyles
) -> MigNode:
    first = devices[0]
    profile = Text(first.profile or f"profile {NA}")
    if first.profile is not None and first.profile_derived:
        profile.append(" (derived)", style=styles.derived)
    # Compute instances share their GPU instance's memory but each has its own SMs.
    sm_counts = [device.sm_count for device in devices]
    sms = None if None in sm_counts else sum(count for count in sm_counts if count is not None)
    parts: list[str | Text] = [
        profile,
        _sms(sms),
        _memory(first.memory.used, first.memory.total),
    ]
    children = tuple(_compute_instance(gpu, device, styles) for device in devices)
    label = _label(f"GI {NA if gi is None else gi}", parts, styles.title, styles)
    return MigNode(("gi", gpu.index, gi), label, children)


def _gpu_node(gpu: GpuSample, styles: MigStyles) -> MigNode:
    head = f"GPU {gpu.index}"
    name = fmt_text(gpu.name)
    if not gpu.mig_mode:
        reason = gpu.reason("mig_mode")
        state = (
            "MIG off" if gpu.mig_mode is False else f"MIG: {(reason or Reason.NOT_AVAILABLE).value}"
        )
        label = _label(head, [name, Text(state, style=styles.note)], styles.title, styles)
        return MigNode(("gpu", gpu.index), label, leaf=True)
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
    parts: list[str | Text] = [
        name,
        f"{len(order)} GPU instance{'' if len(order) == 1 else 's'}",
        _memory(gpu.memory.used, gpu.memory.total),
        _util(gpu.utilization.gpu, gpu.reason("utilization.gpu"), styles),
    ]
    return MigNode(("gpu", gpu.index), _label(head, parts, styles.title, styles), children)


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

    def on_mount(self) -> None:
        """Render whatever was shown before mounting; follow theme changes."""
        self._refresh_labels()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._refresh_labels())

    def _refresh_labels(self) -> None:
        # Labels carry colours resolved from the current theme, so a new theme means new labels.
        self._sync(self.root, mig_outline(self._snapshot, self._styles()))

    def show(self, snapshot: Snapshot) -> None:
        """Display the MIG layout of ``snapshot``."""
        self._snapshot = snapshot
        if self.is_mounted:
            self._refresh_labels()

    def node_for(self, key: NodeKey) -> TreeNode[NodeKey] | None:
        """The widget node with ``key``, if shown."""
        stack = list(self.root.children)
        while stack:
            node = stack.pop()
            if node.data == key:
                return node
            stack.extend(node.children)
        return None

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

    def _sync(self, parent: TreeNode[NodeKey], wanted: Sequence[MigNode]) -> None:
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
            if found is None:
                before = position if position < len(parent.children) else None
                # New nodes arrive open; nodes already there keep what the user made of them.
                child = parent.add(
                    node.label,
                    node.key,
                    before=before,
                    expand=not node.leaf,
                    allow_expand=not node.leaf,
                )
            else:
                child = found
                if child.label != node.label:
                    child.set_label(node.label)
                if child.allow_expand == node.leaf:
                    child.allow_expand = not node.leaf
                    if not node.leaf:
                        child.expand()
            self._sync(child, node.children)
