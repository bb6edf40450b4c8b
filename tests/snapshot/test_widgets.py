"""Pictures of the process table, its dialogs and the MIG tree.

Deterministic by construction: hand-built snapshots or bundled captures, a fixed clock, fixed
terminal sizes, an explicit theme, no animation and no cursor blink. Baselines live in
``__snapshots__/test_widgets/`` (not to be confused with the XML captures in ``snapshots/``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable

from gputop.model import (
    GpuSample,
    Memory,
    MigDeviceSample,
    ProcessSample,
    Reason,
    Snapshot,
)
from gputop.ui.widgets.mig_tree import MigTree
from gputop.ui.widgets.process_table import ProcessTable
from support import pods
from support.shortcuts import mig_node, snapshot_from_path

SnapCompare = Callable[..., bool]

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
NOW = 1_700_000_000.0
MIB = 1024**2
GIB = 1024**3


def _procs() -> tuple[tuple[ProcessSample, ...], tuple[ProcessSample, ...]]:
    gpu0 = (
        ProcessSample(
            2314,
            "C",
            "python",
            18 * GIB + 300 * MIB,
            sm_utilization=87.0,
            user="alice",
            command="python train.py --epochs 90 --batch-size 256",
            cpu_percent=101.3,
            host_memory=6 * GIB,
            start_time=NOW - 7300,
        ),
        ProcessSample(
            1893,
            "G",
            "/usr/lib/xorg/Xorg",
            112 * MIB,
            sm_utilization=0.0,
            user="root",
            command="/usr/lib/xorg/Xorg vt1 -displayfd 3",
            cpu_percent=1.2,
            host_memory=95 * MIB,
            start_time=NOW - 3 * 86400 - 3600,
        ),
        ProcessSample(
            2290,
            "G",
            "/usr/bin/gnome-shell",
            230 * MIB,
            sm_utilization=2.0,
            user="alice",
            command="/usr/bin/gnome-shell",
            cpu_percent=4.0,
            host_memory=410 * MIB,
            start_time=NOW - 3 * 86400,
        ),
    )
    gpu1 = (
        ProcessSample(
            4410,
            "C+G",
            "blender",
            3 * GIB,
            sm_utilization=41.0,
            user="bob",
            command="blender -b scene.blend -a",
            cpu_percent=30.0,
            host_memory=2 * GIB,
            start_time=NOW - 600,
        ),
        ProcessSample(51234, "C", "python3", 7 * GIB, foreign=True),
        ProcessSample(
            7781,
            "C",
            "python",
            9 * GIB,
            sm_utilization=55.0,
            user="carol",
            command="python -m vllm.entrypoints.api_server --model llama",
            cpu_percent=99.5,
            host_memory=12 * GIB,
            start_time=NOW - 45,
        ),
    )
    return gpu0, gpu1  # fmt: skip


def workstation() -> Snapshot:
    gpu0, gpu1 = _procs()
    return Snapshot(
        timestamp=None,
        gpus=(GpuSample(index=0, processes=gpu0), GpuSample(index=1, processes=gpu1)),
    )


def container_view() -> Snapshot:
    """gputop inside a container: the host's other processes do not resolve here."""
    procs = (
        ProcessSample(88121, "C", "python", 22 * GIB, foreign=True),
        ProcessSample(88340, "C", None, 10 * GIB, foreign=True),
        ProcessSample(90411, "C", "python3", 512 * MIB, foreign=True),
        ProcessSample(3120, "C", "python", 4 * GIB, sm_utilization=63.0, user="me",
                      command="python finetune.py", cpu_percent=97.0, host_memory=3 * GIB,
                      start_time=NOW - 1500, local_pid=57),
    )  # fmt: skip
    return Snapshot(timestamp=None, gpus=(GpuSample(index=0, processes=procs),))


def h100_7x1g() -> Snapshot:
    """An H100 split into seven 1g.10gb instances with work on three of them."""
    procs = (
        ProcessSample(3001, "C", "python", 8 * GIB, 7, 0, user="alice", command="python train.py"),
        ProcessSample(3002, "C", "python", 4 * GIB, 9, 0, user="bob", command="python serve.py"),
        ProcessSample(3003, "C", "python3", 1 * GIB, 9, 0, foreign=True),
        ProcessSample(3004, "C", "ollama", 6 * GIB, 13, 0, user="carol", command="ollama serve"),
    )  # fmt: skip
    under_mig = (("utilization.gpu", Reason.UNDER_MIG), ("utilization.memory", Reason.UNDER_MIG))
    devices = tuple(
        MigDeviceSample(
            index=index,
            gpu_instance_id=gi,
            compute_instance_id=0,
            profile="1g.10gb",
            sm_count=16,
            memory=Memory(
                total=9984 * MIB,
                used=13 * MIB + sum(p.memory_used or 0 for p in procs if p.gpu_instance_id == gi),
            ),
            processes=tuple(p for p in procs if p.gpu_instance_id == gi),
            unavailable=under_mig,
        )
        for index, gi in enumerate(range(7, 14))
    )
    gpu = GpuSample(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        memory=Memory(total=81559 * MIB, used=19 * GIB + 91 * MIB),
        mig_mode=True,
        mig_devices=devices,
        processes=procs,
        unavailable=under_mig,
    )
    t4 = GpuSample(index=1, name="Tesla T4", mig_mode=False)
    return Snapshot(timestamp=None, gpus=(gpu, t4))


class WidgetApp(App[None]):
    """One widget, full screen, fed one snapshot."""

    TITLE = "gputop widgets"

    def __init__(self, widget: Widget, snapshot: Snapshot) -> None:
        super().__init__()
        self.widget = widget
        self.snapshot = snapshot
        self.theme = "textual-dark"
        self.animation_level = "none"

    def compose(self) -> ComposeResult:
        yield self.widget

    def on_mount(self) -> None:
        widget = self.widget
        if isinstance(widget, ProcessTable):
            widget.show(self.snapshot)
            widget.query_one(DataTable).focus()
        elif isinstance(widget, MigTree):
            widget.show(self.snapshot)
            widget.focus()


def table_app(snapshot: Snapshot, readonly: bool = False) -> WidgetApp:
    return WidgetApp(ProcessTable(readonly=readonly, clock=lambda: NOW), snapshot)


@pytest.fixture(autouse=True)
def colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """App.__init__ reads NO_COLOR: a user's setting must not change the pictures."""
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture
def utc() -> Iterator[None]:
    """The details show a local start time: pin the zone so the picture is the same anywhere."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_process_table(snap_compare: SnapCompare) -> None:
    assert snap_compare(table_app(workstation()), terminal_size=(120, 12))


def test_process_table_ssh_80x24(snap_compare: SnapCompare) -> None:
    assert snap_compare(table_app(workstation()), terminal_size=(80, 24))


def test_process_table_filtered(snap_compare: SnapCompare) -> None:
    assert snap_compare(table_app(workstation()), press=["/", *"python"], terminal_size=(120, 12))


def test_process_table_sorted_by_pid(snap_compare: SnapCompare) -> None:
    assert snap_compare(table_app(workstation()), press=["<", "<", "<"], terminal_size=(120, 12))


def test_process_table_compute_only_reversed(snap_compare: SnapCompare) -> None:
    assert snap_compare(table_app(workstation()), press=["t", "r"], terminal_size=(120, 12))


def test_process_table_foreign(snap_compare: SnapCompare) -> None:
    assert snap_compare(table_app(container_view()), terminal_size=(100, 10))


def test_process_table_replayed_capture(snap_compare: SnapCompare) -> None:
    capture = snapshot_from_path(CAPTURES / "rtx3090x4-procs-v12.xml")
    assert snap_compare(table_app(capture, readonly=True), terminal_size=(100, 14))


def test_signal_dialog(snap_compare: SnapCompare) -> None:
    assert snap_compare(table_app(workstation()), press=["down", "k"], terminal_size=(100, 16))


def test_process_details(snap_compare: SnapCompare, utc: None) -> None:
    assert snap_compare(table_app(workstation()), press=["enter"], terminal_size=(100, 24))


def test_mig_tree_a100_capture(snap_compare: SnapCompare) -> None:
    capture = snapshot_from_path(CAPTURES / "a100-sxm4-80gb-mig-v12.xml")
    assert snap_compare(WidgetApp(MigTree(), capture), terminal_size=(110, 12))


def test_mig_tree_h100_7x1g(snap_compare: SnapCompare) -> None:
    async def collapse_gi_8(pilot: Pilot[None]) -> None:
        tree = pilot.app.query_one(MigTree)
        node = mig_node(tree, ("gi", 0, 8))
        assert node is not None
        node.collapse()
        await pilot.pause()

    assert snap_compare(
        WidgetApp(MigTree(), h100_7x1g()), run_before=collapse_gi_8, terminal_size=(110, 24)
    )


@pytest.mark.patch("remeasured_table")
def test_process_table_grouped_by_pod(snap_compare: SnapCompare) -> None:
    """A Kubernetes node, one line per pod (``p``), the training pod expanded (Enter)."""
    assert snap_compare(
        table_app(pods.timeless(pods.k8s_node())),
        press=["p", "down", "enter"],
        terminal_size=(120, 12),
    )


def test_mig_tree_with_pods(snap_compare: SnapCompare) -> None:
    """An H100 split for pods: one pod per instance, two pods time-sharing one, and a pod the
    kubelet names on an instance whose processes are hidden."""
    assert snap_compare(WidgetApp(MigTree(), pods.mig_node()), terminal_size=(110, 16))


def test_process_table_inside_a_pod(snap_compare: SnapCompare) -> None:
    """gputop in a pod without hostPID: the line about its pod and the other containers."""
    assert snap_compare(table_app(pods.timeless(pods.inside_pod())), terminal_size=(100, 10))
