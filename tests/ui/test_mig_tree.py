"""The MIG tree: its outline from real and hand-built layouts, and state across refreshes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from gputop.model import (
    GpuSample,
    Memory,
    MigDeviceSample,
    ProcessSample,
    Reason,
    Snapshot,
    Utilization,
)
from gputop.ui.widgets.mig_tree import MigNode, MigStyles, MigTree, NodeKey, mig_outline
from support.shortcuts import mig_node, snapshot_from_path

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
MIB = 1024**2
GIB = 1024**3
UNDER_MIG = (
    ("utilization.gpu", Reason.UNDER_MIG),
    ("utilization.memory", Reason.UNDER_MIG),
)


def h100_7x1g(extra: tuple[ProcessSample, ...] = (), gi7_used: int = 8 * GIB) -> Snapshot:
    """An H100 80GB split into seven 1g.10gb instances (GI 7..13, CI 0 each), with work on
    GI 7, 9 (one of them from another container) and 13."""
    processes = (
        ProcessSample(3001, "C", "python", gi7_used - 13 * MIB, 7, 0, user="alice",
                      command="python train.py"),
        ProcessSample(3002, "C", "python", 4 * GIB, 9, 0, user="bob", command="python serve.py"),
        ProcessSample(3003, "C", "python3", 1 * GIB, 9, 0, foreign=True),
        ProcessSample(3004, "C", "ollama", 6 * GIB, 13, 0, user="carol", command="ollama serve"),
        *extra,
    )  # fmt: skip
    devices = []
    for index, gi in enumerate(range(7, 14)):
        mine = tuple(p for p in processes if p.gpu_instance_id == gi)
        used = gi7_used if gi == 7 else 13 * MIB + sum(p.memory_used or 0 for p in mine)
        devices.append(
            MigDeviceSample(
                index=index,
                gpu_instance_id=gi,
                compute_instance_id=0,
                profile="1g.10gb",
                sm_count=16,
                memory=Memory(total=9984 * MIB, used=used, free=9984 * MIB - used),
                uuid=f"MIG-00000000-0000-0000-0000-00000000000{index}",
                processes=mine,
                unavailable=UNDER_MIG,
            )
        )
    gpu = GpuSample(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        memory=Memory(total=81559 * MIB, used=20 * GIB),
        mig_mode=True,
        mig_devices=tuple(devices),
        processes=processes,
        unavailable=UNDER_MIG,
    )
    return Snapshot(timestamp=None, gpus=(gpu,))


def find(nodes: list[MigNode] | tuple[MigNode, ...], key: NodeKey) -> MigNode:
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.key == key:
            return node
        stack.extend(node.children)
    raise AssertionError(f"no node {key}")


class TestOutline:
    def test_a100_capture(self) -> None:
        outline = mig_outline(snapshot_from_path(CAPTURES / "a100-sxm4-80gb-mig-v12.xml"))
        assert [node.key for node in outline] == [("gpu", 0)]
        gpu = outline[0]
        assert gpu.label.plain == (
            "GPU 0 · NVIDIA A100-SXM4-80GB · 4 GPU instances · memory 0.05/80.00GiB"
            " · util: not available under MIG"
        )
        assert [child.key for child in gpu.children] == [("gi", 0, gi) for gi in (3, 4, 5, 6)]
        gi3 = gpu.children[0]
        assert gi3.label.plain == ("GI 3 · 1g.20gb (derived) · 14 SMs · memory 0.01/19.50GiB")
        (ci,) = gi3.children
        assert ci.key == ("ci", 0, 3, 0)
        assert ci.label.plain == (
            "CI 0 · MIG device 0 · 14 SMs · util: not available under MIG · 0 processes"
        )
        assert ci.leaf
        assert "0%" not in "".join(n.label.plain for n in (gpu, gi3, ci))

    def test_h100_seven_1g_instances_with_processes(self) -> None:
        outline = mig_outline(h100_7x1g())
        gpu = outline[0]
        assert "7 GPU instances" in gpu.label.plain
        assert [child.key[2] for child in gpu.children] == list(range(7, 14))
        gi9 = find(outline, ("gi", 0, 9))
        assert gi9.label.plain == "GI 9 · 1g.10gb · 16 SMs · memory 5.01/9.75GiB"
        ci9 = find(outline, ("ci", 0, 9, 0))
        assert not ci9.leaf
        assert "2 processes" in ci9.label.plain
        assert [p.label.plain for p in ci9.children] == [
            "PID 3002 · bob · C · 4096MiB · python serve.py",
            "PID 3003 · (other ns) · C · 1024MiB · python3",
        ]
        assert all(p.leaf for p in ci9.children)
        assert find(outline, ("ci", 0, 8, 0)).leaf
        assert "1 process" in find(outline, ("ci", 0, 13, 0)).label.plain

    def test_processes_listed_only_on_the_gpu_still_show(self) -> None:
        snap = h100_7x1g()
        gpu = snap.gpus[0]
        bare = tuple(dataclasses.replace(d, processes=()) for d in gpu.mig_devices)
        snap = dataclasses.replace(snap, gpus=(dataclasses.replace(gpu, mig_devices=bare),))
        ci9 = find(mig_outline(snap), ("ci", 0, 9, 0))
        assert [p.key[-1] for p in ci9.children] == [3002, 3003]

    def test_gpu_instance_with_two_compute_instances(self) -> None:
        shared = Memory(total=40192 * MIB, used=2 * GIB)
        devices = (
            MigDeviceSample(0, 1, 1, profile="3g.40gb", sm_count=28, memory=shared),
            MigDeviceSample(1, 1, 0, profile="3g.40gb", sm_count=14, memory=shared),
        )
        gpu = GpuSample(index=2, name="A100", mig_mode=True, mig_devices=devices)
        outline = mig_outline(Snapshot(timestamp=None, gpus=(gpu,)))
        gi = find(outline, ("gi", 2, 1))
        assert gi.label.plain == "GI 1 · 3g.40gb · 42 SMs · memory 2.00/39.25GiB"
        assert [child.key for child in gi.children] == [("ci", 2, 1, 0), ("ci", 2, 1, 1)]

    def test_unknown_values_say_so(self) -> None:
        device = MigDeviceSample(None, 5, None, utilization=Utilization(gpu=None))
        gpu = GpuSample(index=0, mig_mode=True, mig_devices=(device,))
        outline = mig_outline(Snapshot(timestamp=None, gpus=(gpu,)))
        assert find(outline, ("gi", 0, 5)).label.plain == (
            "GI 5 · profile n/a · n/a SMs · memory n/a"
        )
        ci = find(outline, ("ci", 0, 5, None))
        assert ci.label.plain.startswith("CI n/a · MIG device n/a · n/a SMs · util: n/a")

    def test_reported_utilization_is_shown(self) -> None:
        device = MigDeviceSample(0, 1, 0, utilization=Utilization(gpu=37.0))
        gpu = GpuSample(index=0, mig_mode=True, mig_devices=(device,))
        ci = find(mig_outline(Snapshot(timestamp=None, gpus=(gpu,))), ("ci", 0, 1, 0))
        assert "util 37%" in ci.label.plain

    def test_non_mig_gpus_are_one_line_each(self) -> None:
        gpus = (
            GpuSample(index=0, name="Tesla T4", mig_mode=False),
            GpuSample(
                index=1,
                name="GeForce GTX 1070",
                unavailable=(("mig_mode", Reason.NOT_SUPPORTED),),
            ),
            GpuSample(index=2, name="Tesla K80"),
        )
        outline = mig_outline(Snapshot(timestamp=None, gpus=gpus))
        assert [node.label.plain for node in outline] == [
            "GPU 0 · Tesla T4 · MIG off",
            "GPU 1 · GeForce GTX 1070 · MIG: not supported",
            "GPU 2 · Tesla K80 · MIG: not available",
        ]
        assert all(node.leaf and not node.children for node in outline)

    def test_mig_on_without_instances(self) -> None:
        gpu = GpuSample(index=0, name="A30", mig_mode=True)
        (node,) = mig_outline(Snapshot(timestamp=None, gpus=(gpu,)))
        assert "0 GPU instances" in node.label.plain
        assert [child.label.plain for child in node.children] == ["no GPU instances created"]

    def test_no_gpus(self) -> None:
        assert [n.label.plain for n in mig_outline(None)] == ["no GPUs"]
        assert [n.label.plain for n in mig_outline(Snapshot(timestamp=None))] == ["no GPUs"]


class TreeApp(App[None]):
    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def compose(self) -> ComposeResult:
        yield MigTree()

    def on_mount(self) -> None:
        tree = self.query_one(MigTree)
        tree.show(self.snapshot)
        tree.focus()


def node(app: App[None], key: NodeKey) -> object:
    found = mig_node(app.query_one(MigTree), key)
    assert found is not None, key
    return found


async def test_tree_opens_everything_at_first() -> None:
    app = TreeApp(h100_7x1g())
    async with app.run_test() as pilot:
        await pilot.pause()
        tree = app.query_one(MigTree)
        gi7 = mig_node(tree, ("gi", 0, 7))
        assert gi7 is not None
        assert gi7.is_expanded
        ci9 = mig_node(tree, ("ci", 0, 9, 0))
        assert ci9 is not None
        assert ci9.is_expanded
        assert [child.data for child in ci9.children] == [
            ("ci", 0, 9, 0, "proc", 3002),
            ("ci", 0, 9, 0, "proc", 3003),
        ]
        # GPU, 7 GIs, 7 CIs, 4 processes.
        assert tree.last_line == 1 + 7 + 7 + 4 - 1


async def test_collapsed_nodes_stay_collapsed_across_refreshes() -> None:
    app = TreeApp(h100_7x1g())
    async with app.run_test() as pilot:
        tree = app.query_one(MigTree)
        gi7 = mig_node(tree, ("gi", 0, 7))
        assert gi7 is not None
        await pilot.press("down", "down")  # no cursor → GPU 0 → GI 7
        assert tree.cursor_node is gi7
        await pilot.press("space")
        assert not gi7.is_expanded
        newcomer = ProcessSample(3010, "C", "python", 1 * GIB, 7, 0, user="dave", command="x")
        tree.show(h100_7x1g(extra=(newcomer,), gi7_used=9 * GIB))
        await pilot.pause()
        same = mig_node(tree, ("gi", 0, 7))
        assert same is gi7
        assert not gi7.is_expanded
        assert "memory 9.00/9.75GiB" in str(gi7.label)
        ci7 = mig_node(tree, ("ci", 0, 7, 0))
        assert ci7 is not None
        assert [child.data for child in ci7.children][-1] == ("ci", 0, 7, 0, "proc", 3010)
        gi8 = mig_node(tree, ("gi", 0, 8))
        assert gi8 is not None
        assert gi8.is_expanded


async def test_cursor_follows_its_node_when_lines_are_added_above() -> None:
    app = TreeApp(h100_7x1g())
    async with app.run_test(size=(100, 40)) as pilot:
        tree = app.query_one(MigTree)
        target = mig_node(tree, ("gi", 0, 11))
        assert target is not None
        tree.move_cursor(target)
        await pilot.pause()
        line_before = tree.cursor_line
        extra = tuple(
            ProcessSample(4000 + i, "C", "python", MIB, 8, 0, user="eve") for i in range(3)
        )
        tree.show(h100_7x1g(extra=extra))
        await pilot.pause()
        assert tree.cursor_node is target
        assert tree.cursor_line == line_before + 3


async def test_vanished_process_is_removed_and_an_emptied_instance_becomes_a_leaf() -> None:
    app = TreeApp(h100_7x1g())
    async with app.run_test() as pilot:
        tree = app.query_one(MigTree)
        snap = h100_7x1g()
        gpu = snap.gpus[0]
        kept = tuple(p for p in gpu.processes if p.pid != 3004)
        devices = tuple(
            dataclasses.replace(d, processes=tuple(p for p in d.processes if p.pid != 3004))
            for d in gpu.mig_devices
        )
        tree.show(
            dataclasses.replace(
                snap, gpus=(dataclasses.replace(gpu, processes=kept, mig_devices=devices),)
            )
        )
        await pilot.pause()
        assert mig_node(tree, ("ci", 0, 13, 0, "proc", 3004)) is None
        ci13 = mig_node(tree, ("ci", 0, 13, 0))
        assert ci13 is not None
        assert not ci13.allow_expand
        assert "0 proc" in str(ci13.label)  # "0 processes", or "0 procs" where narrow
        # and back: a process arriving makes it expandable and open again
        tree.show(h100_7x1g())
        await pilot.pause()
        assert ci13.allow_expand
        assert ci13.is_expanded


async def test_switching_between_mig_and_plain_gpus() -> None:
    plain = Snapshot(timestamp=None, gpus=(GpuSample(index=0, name="Tesla T4", mig_mode=False),))
    app = TreeApp(plain)
    async with app.run_test() as pilot:
        tree = app.query_one(MigTree)
        gpu = mig_node(tree, ("gpu", 0))
        assert gpu is not None
        assert not gpu.allow_expand
        assert "MIG off" in str(gpu.label)
        tree.show(h100_7x1g())
        await pilot.pause()
        assert gpu.allow_expand
        assert gpu.is_expanded
        assert len(gpu.children) == 7


async def test_show_before_mount() -> None:
    class Early(App[None]):
        def compose(self) -> ComposeResult:
            tree = MigTree()
            tree.show(h100_7x1g())
            yield tree

    app = Early()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert mig_node(app.query_one(MigTree), ("ci", 0, 13, 0, "proc", 3004)) is not None


def tree_nodes(tree: MigTree) -> list[tuple[NodeKey, str]]:
    """(key, label) of every node, depth first."""
    found: list[tuple[NodeKey, str]] = []
    stack = list(reversed(tree.root.children))
    while stack:
        node = stack.pop()
        assert node.data is not None
        found.append((node.data, str(node.label)))
        stack.extend(reversed(node.children))
    return found


MEMORY_VALUE = re.compile(r"\bmem(ory)? \d+\.\d\d/\d+\.\d\dGiB(?= ·|$)")


@pytest.mark.parametrize("size", [(220, 50), (160, 40), (120, 40), (80, 24)])
async def test_no_line_is_cut_by_the_edge_and_values_stay_whole(size: tuple[int, int]) -> None:
    from support.apps import replay_app, varied_stream

    app = replay_app(varied_stream(snapshot_from_path(CAPTURES / "a100-sxm4-80gb-mig-v12.xml"), 3))
    async with app.run_test(size=size) as pilot:
        await pilot.press("m")
        await pilot.pause()
        tree = app.screen.query_one(MigTree)
        # The widest line fits the tree: nothing runs past its edge.
        assert 0 < tree.virtual_size.width <= tree.scrollable_content_region.width
        nodes = tree_nodes(tree)
        assert [key[0] for key, _ in nodes] == [
            "gpu",
            "gi",
            "ci",
            "gi",
            "ci",
            "gi",
            "ci",
            "gi",
            "ci",
        ]
        for key, label in nodes:
            if key[0] == "gi":
                # The memory of each instance, whole, in the GPU's unit.
                assert MEMORY_VALUE.search(label), label
            if key[0] == "ci":
                assert "util n/a" in label or "util: not available under MIG" in label
        if size[0] >= 220:
            # Room for every word: the full labels, as the 220 columns had not.
            gi3 = dict(nodes)[("gi", 0, 3)]
            assert gi3 == "GI 3 · 1g.20gb (derived) · 14 SMs · memory 0.01/19.50GiB"
            ci = dict(nodes)[("ci", 0, 3, 0)]
            assert "util: not available under MIG" in ci


def test_a_label_too_long_gives_up_words_then_whole_parts_never_half_a_value() -> None:
    gpu = h100_7x1g().gpus[0]
    outline = mig_outline(Snapshot(timestamp=None, gpus=(gpu,)))
    root = outline[0]
    full = root.label.plain
    assert root.fitted(len(full), MigStyles()).plain == full
    seen = set()
    for width in range(len(full), 0, -1):
        text = root.fitted(width, MigStyles()).plain
        assert len(text) <= width
        seen.add(text)
        # A memory amount is there whole or not at all.
        if "mem" in text:
            assert MEMORY_VALUE.search(text), text
    memory = MEMORY_VALUE.search(full)
    assert memory is not None
    amount = memory.group(0).split()[-1]
    # Shorter words first, then the parts without a value, memory and utilization last.
    assert f"GPU 0 · H100 80GB HBM3 · 7 GIs · mem {amount} · util n/a" in seen
    assert f"GPU 0 · 7 GIs · mem {amount} · util n/a · …" in seen
    assert f"GPU 0 · mem {amount} · util n/a · …" in seen
    assert f"GPU 0 · mem {amount} · …" in seen
    # A process keeps its memory and gives up the end of its command, at a word.
    process = outline[0].children[0].children[0].children[0]
    full = process.label.plain
    assert full.endswith(" · python train.py")
    assert process.fitted(45, MigStyles()).plain == full.replace("train.py", "").rstrip() + "…"
