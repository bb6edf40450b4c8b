"""Pictures of whole gputop screens (pytest-textual-snapshot).

Deterministic by construction: data from the captures in ``snapshots/`` (varied by a formula
of the document index, never by chance), no poller thread (a hand-driven loop), host and
clock hidden, theme set explicitly, animations off, no cursor blink, fixed terminal sizes.
Baselines live in ``__snapshots__/test_screens/`` (SVG pictures; the XML inputs are the
repository's top-level ``snapshots/``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from fakes.nvml_h200 import h200_gpu, loaded_windows
from gputop.model import GpuSample, Memory, Power, ProcessSample, Reason, Snapshot, Utilization
from gputop.sinks.smi_xml import snapshot_to_xml
from gputop.sources.smi.recording import Recording
from gputop.ui.settings import UiSettings
from support import pods
from support.apps import (
    FIXED_SETTINGS,
    START,
    eight_gpus,
    live_app,
    load,
    replay_app,
    timeline_app,
    varied_stream,
)
from support.h200 import h200_loop

SnapCompare = Callable[..., bool]

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
HISTORY = 90
"""Ticks of history behind each live picture: enough to fill every sparkline."""


def capture(name: str) -> Snapshot:
    return load(CAPTURES / name)


@pytest.fixture(autouse=True)
def steady(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No blinking cursor, and NO_COLOR unset unless a test sets it."""
    monkeypatch.setattr(Input, "cursor_blink", False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield


def live(snapshot: Snapshot, **kwargs: object) -> object:
    return live_app(varied_stream(snapshot, HISTORY), ticks=HISTORY, **kwargs)  # type: ignore[arg-type]


def test_one_gpu_with_processes(snap_compare: SnapCompare) -> None:
    app = live(capture("gtx1070ti-procs-v11.xml"))
    assert snap_compare(app, terminal_size=(120, 40))


def test_two_gpus(snap_compare: SnapCompare) -> None:
    app = live(capture("rtx-a5000x2-v13.xml"))
    assert snap_compare(app, terminal_size=(120, 40))


CHARTED = 600
"""Ticks of history behind the pictures of panels with charts: ten minutes, every chart full."""


def test_one_h200_charts_its_history_at_120x40(snap_compare: SnapCompare) -> None:
    # Issue 25 §3: the real H200 (8 s busy, 4 s idle) left 28 of these rows blank.
    app = live_app(h200_loop(CHARTED), ticks=CHARTED)
    assert snap_compare(app, terminal_size=(120, 40))


def test_two_gpus_chart_their_history_at_120x50(snap_compare: SnapCompare) -> None:
    app = live_app(varied_stream(capture("rtx-a5000x2-v13.xml"), CHARTED), ticks=CHARTED)
    assert snap_compare(app, terminal_size=(120, 50))


def test_one_gpu_charts_its_history_at_100x30(snap_compare: SnapCompare) -> None:
    app = live_app(varied_stream(capture("gtx1070ti-procs-v11.xml"), CHARTED), ticks=CHARTED)
    assert snap_compare(app, terminal_size=(100, 30))


def test_eight_gpus_compact(snap_compare: SnapCompare) -> None:
    app = live(eight_gpus(capture("rtx3090x4-procs-v12.xml")))
    assert snap_compare(app, terminal_size=(120, 40))


def test_eight_gpus_two_columns_on_a_wide_terminal(snap_compare: SnapCompare) -> None:
    app = live(eight_gpus(capture("rtx3090x4-procs-v12.xml")))
    assert snap_compare(app, terminal_size=(200, 56))


def test_a100_with_the_mig_tree_open(snap_compare: SnapCompare) -> None:
    stream = varied_stream(capture("a100-sxm4-80gb-mig-v12.xml"), 60)
    app = replay_app(stream, source_label="a100-sxm4-80gb-mig-v12.xml")

    async def open_the_tree(pilot: Pilot[int]) -> None:
        # The tree narrows the process table, which drops its host columns when its own
        # Resize arrives: a frame taken before that showed them (the baseline was a race).
        await pilot.press("m")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, run_before=open_the_tree, terminal_size=(120, 40))


def test_datacenter_cards_with_many_values_not_reported(snap_compare: SnapCompare) -> None:
    app = replay_app([capture("tesla-k80x4-azure-v10.xml")], source_label="tesla-k80x4.xml")
    assert snap_compare(app, terminal_size=(120, 40))


def test_process_filter_applied(snap_compare: SnapCompare) -> None:
    app = live(capture("gtx1070x6-v9.xml"))
    assert snap_compare(app, press=["slash", *"ethminer", "enter"], terminal_size=(120, 40))


def test_process_sort_applied(snap_compare: SnapCompare) -> None:
    app = live(capture("rtx3090x4-procs-v12.xml"))
    # From GPU MEM: two columns right (SM%, CPU% -> PID order is by CPU%), then back to PID.
    assert snap_compare(
        app,
        press=["less_than_sign", "less_than_sign", "less_than_sign", "r"],
        terminal_size=(120, 40),
    )


def container_view(base: Snapshot) -> Snapshot:
    """Inside a container: the first process of each GPU resolves here, the others do not."""
    gpus = []
    for gpu in base.gpus:
        processes = []
        for number, process in enumerate(gpu.processes):
            if number == 0:
                processes.append(
                    dataclasses.replace(
                        process,
                        user="me",
                        command=f"python train.py --gpu {gpu.index}",
                        local_pid=100 + gpu.index,
                    )
                )
            else:
                processes.append(dataclasses.replace(process, foreign=True))
        gpus.append(dataclasses.replace(gpu, processes=tuple(processes)))
    return dataclasses.replace(base, gpus=tuple(gpus))


def test_processes_from_another_pid_namespace(snap_compare: SnapCompare) -> None:
    app = live(container_view(capture("rtx3090x4-procs-v12.xml")))
    assert snap_compare(app, terminal_size=(120, 40))


def test_compact_at_80x24(snap_compare: SnapCompare) -> None:
    app = live(capture("rtx3090x4-procs-v12.xml"))
    assert snap_compare(app, terminal_size=(80, 24))


def test_single_gpu_at_80x24(snap_compare: SnapCompare) -> None:
    app = live(capture("tesla-t4-v11.xml"))
    assert snap_compare(app, terminal_size=(80, 24))


def test_help_screen(snap_compare: SnapCompare) -> None:
    app = live(capture("rtx3090x4-procs-v12.xml"))
    assert snap_compare(app, press=["question_mark"], terminal_size=(120, 40))


def test_replay_paused_mid_stream(snap_compare: SnapCompare, tmp_path: Path) -> None:
    stream = varied_stream(capture("rtx3090x4-procs-v12.xml"), 120)
    path = tmp_path / "rtx3090x4-stream.xml"
    path.write_bytes(b"".join(snapshot_to_xml(snapshot) for snapshot in stream))
    recording = Recording.open(path)
    app = timeline_app(recording, position=70, source_label=path.name)
    assert snap_compare(app, terminal_size=(120, 40))
    recording.close()


def lost_and_gone(base: Snapshot) -> list[Snapshot]:
    """GPU 1 falls off the bus half-way; GPU 3 vanishes from the last snapshot."""
    stream = varied_stream(base, HISTORY)
    changed = []
    for number, snapshot in enumerate(stream):
        gpus = list(snapshot.gpus)
        if number >= HISTORY // 2:
            lost = gpus[1]
            gpus[1] = dataclasses.replace(
                lost,
                lost=True,
                utilization=Utilization(),
                memory=Memory(total=lost.memory.total),
                power=Power(limit=lost.power.limit),
                processes=(),
                unavailable=(("utilization.gpu", Reason.GPU_LOST), ("power.draw", Reason.GPU_LOST)),
            )
        if number == HISTORY - 1:
            del gpus[3]
        changed.append(dataclasses.replace(snapshot, gpus=tuple(gpus)))
    return changed


def test_lost_and_gone_gpus(snap_compare: SnapCompare) -> None:
    app = replay_app(lost_and_gone(capture("rtx3090x4-procs-v12.xml")), source_label="lost.xml")
    assert snap_compare(app, terminal_size=(120, 40))


def test_light_theme(snap_compare: SnapCompare) -> None:
    settings = dataclasses.replace(FIXED_SETTINGS, theme="light")
    app = live(capture("rtx-a5000x2-v13.xml"), settings=settings)
    assert snap_compare(app, terminal_size=(120, 40))


def test_no_color(snap_compare: SnapCompare, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    hot = capture("rtx3090x4-procs-v12.xml")
    app = live(hot)
    assert snap_compare(app, terminal_size=(120, 40))


def test_focused_gpu_shows_its_detail_in_compact_mode(snap_compare: SnapCompare) -> None:
    app = live(eight_gpus(capture("rtx3090x4-procs-v12.xml")))

    async def focus_gpu_5(pilot: Pilot[object]) -> None:
        while len(pilot.app.screen.query("GpuPanel")) < 8:
            await pilot.pause()
        pilot.app.screen.query("GpuPanel")[5].focus()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=focus_gpu_5)


def h200_box(ticks: int) -> list[Snapshot]:
    """Eight H200s, each through the real H200's one-second windows (busy 8 s, idle 4 s),
    GPU i ``i`` windows ahead: utilization, GPM activity and power as recorded together."""
    windows = loaded_windows()
    base = capture("rtx3090x4-procs-v12.xml")
    stream = []
    for tick in range(ticks):
        gpus = tuple(
            dataclasses.replace(
                h200_gpu(windows[(tick + index) % len(windows)], index),
                uuid=f"GPU-{index:08x}-0000-0000-0000-000000000000",
                pci_bus_id=f"00000000:{0x18 + index * 0x10:02X}:00.0",
                throttle_reasons=(),
                processes=(),
            )
            for index in range(8)
        )
        stream.append(
            dataclasses.replace(
                base, timestamp=START + timedelta(seconds=tick), gpus=gpus, attached_gpus=8
            )
        )
    return stream


def test_focused_h200_shows_its_gpm_activity_in_compact_mode(snap_compare: SnapCompare) -> None:
    """Eight H200s (GPM): each detail line opens with SM, tensor, occupancy and DRAM
    activity (0 % on those between two busy stretches), PCIe traffic after the codecs."""
    app = live_app(h200_box(HISTORY), ticks=HISTORY)

    async def focus_gpu_2(pilot: Pilot[object]) -> None:
        while len(pilot.app.screen.query("GpuPanel")) < 8:
            await pilot.pause()
        pilot.app.screen.query("GpuPanel")[2].focus()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=focus_gpu_2)


def test_settings_used_here_hide_host_and_clock() -> None:
    # The pictures above are only reproducible because of these.
    expected = UiSettings(theme="dark", show_host=False, show_clock=False, animate=False)
    assert expected == FIXED_SETTINGS
    assert GpuSample(index=0).lost is False
    assert ProcessSample(pid=1).foreign is False


def input_starved(base: Snapshot) -> list[Snapshot]:
    """GPU 0 keeps a process and its memory but works at 8 %: the data loader is behind."""
    changed = []
    for snapshot in varied_stream(base, HISTORY):
        gpus = list(snapshot.gpus)
        gpus[0] = dataclasses.replace(
            gpus[0],
            utilization=dataclasses.replace(gpus[0].utilization, gpu=8.0),
            processes=tuple(
                dataclasses.replace(process, cpu_percent=99.0) for process in gpus[0].processes
            ),
        )
        changed.append(dataclasses.replace(snapshot, gpus=tuple(gpus)))
    return changed


def test_diagnosis_on_a_waiting_gpu_panel(snap_compare: SnapCompare) -> None:
    app = replay_app(input_starved(capture("rtx-a5000x2-v13.xml")), source_label="starved.xml")
    assert snap_compare(app, terminal_size=(120, 40))


def test_a_kubernetes_node(snap_compare: SnapCompare) -> None:
    """Two GPUs of a node running pods: GPU 0 is the vLLM pod's (the kubelet says so), so its
    panel names it; GPU 1 is shared by two pods. POD and CONTAINER columns; ``p`` offered."""
    base = capture("rtx-a5000x2-v13.xml")
    # The live table's clock is the wall clock: no start times, no moving TIME.
    node = pods.timeless(pods.k8s_node())
    gpus = tuple(
        dataclasses.replace(
            gpu,
            processes=pods_gpu.processes,
            holders=(pods.LLAMA,) if gpu.index == 0 else (),
        )
        for gpu, pods_gpu in zip(base.gpus, node.gpus, strict=True)
    )
    app = live(dataclasses.replace(base, gpus=gpus))
    assert snap_compare(app, terminal_size=(140, 30))
