"""GPU panels: thresholds, sparklines, n/a reasons, layouts by size, and redraw economy."""

from __future__ import annotations

import dataclasses
import math
from array import array
from datetime import datetime
from pathlib import Path

import pytest

from gputop.cli.tui import tui_pipeline
from gputop.history import EMPTY_VIEW, Metric
from gputop.model import (
    GpuSample,
    Memory,
    Power,
    Reason,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.model.units import NA
from gputop.pipeline.feed import LiveFeed, ReplayFeed
from gputop.pipeline.tick import Tick
from gputop.ui.render.gauges import (
    Level,
    compact_gauges,
    detail_parts,
    gauges,
    memory_level,
    power_level,
    short_name,
    sparkline,
    temperature_level,
    throttle_level,
)
from gputop.ui.render.panel_lines import (
    COLUMN_RULE,
    PanelState,
    badge,
    compact_header,
    compact_line,
    detail_line,
    full_lines,
)
from gputop.ui.screens.main_layout import choose_layout
from gputop.ui.widgets.gpu_grid import GpuGrid, panel_entries
from gputop.ui.widgets.gpu_panel import GpuPanel
from support.apps import FIXED_SETTINGS, eight_gpus, live_app, load, varied_stream
from support.shortcuts import changed_span

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
GIB = 1024**3


def card(**changes: object) -> GpuSample:
    base = GpuSample(
        index=0,
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-a",
        utilization=Utilization(gpu=50.0, encoder=0.0, decoder=0.0),
        memory=Memory(total=80 * GIB, used=20 * GIB),
        power=Power(draw=200.0, limit=400.0),
        temperature=Temperature(gpu=50.0, slowdown=90.0),
        throttle_reasons=(),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def width_of(line: tuple[tuple[str, str], ...]) -> int:
    return sum(len(text) for text, _ in line)


def plain(line: tuple[tuple[str, str], ...]) -> str:
    return "".join(text for text, _ in line)


@pytest.mark.parametrize(
    ("temp", "slowdown", "level"),
    [(50.0, 90.0, Level.OK), (80.0, 90.0, Level.WARN), (87.0, 90.0, Level.CRIT),
     (85.0, None, Level.WARN), (None, 90.0, Level.NA)],
)  # fmt: skip
def test_temperature_turns_near_the_slowdown_threshold(
    temp: float | None, slowdown: float | None, level: Level
) -> None:
    gpu = card(temperature=Temperature(gpu=temp, slowdown=slowdown))
    assert temperature_level(gpu) is level


def test_memory_and_power_thresholds() -> None:
    assert memory_level(card(memory=Memory(total=100, used=90))) is Level.WARN
    assert memory_level(card(memory=Memory(total=100, used=99))) is Level.CRIT
    assert memory_level(card(memory=Memory(total=None, used=99))) is Level.NA
    # A GPU at work draws up to its limit, and at full load runs at its power cap: that is
    # information, never a warning colour (issue 25: an H200 training at 690-708 W of 700 W).
    at_cap = card(power=Power(draw=395.0, limit=400.0), throttle_reasons=("sw_power_cap",))
    assert power_level(card(power=Power(draw=395.0, limit=400.0))) is Level.OK
    assert power_level(at_cap) is Level.OK
    assert throttle_level(("sw_power_cap",), at_cap) is Level.OK
    # The cap holding back a GPU at low utilization, the draw at the limit, is a warning;
    # the power brake is critical whatever the load.
    held_back = dataclasses.replace(at_cap, utilization=Utilization(gpu=4.0))
    assert power_level(held_back) is Level.WARN
    assert throttle_level(("sw_power_cap",), held_back) is Level.WARN
    brake = card(throttle_reasons=("hw_power_brake_slowdown",))
    assert power_level(brake) is Level.CRIT
    assert power_level(card(power=Power(draw=10.0, limit=None))) is Level.OK
    assert throttle_level(("gpu_idle",), card()) is Level.OK
    assert throttle_level(("hw_thermal_slowdown", "gpu_idle"), card()) is Level.CRIT


def test_lost_gpus_read_not_available_everywhere() -> None:
    lost = card(lost=True)
    assert all(g.value.startswith(NA) and g.level is Level.NA for g in gauges(lost))
    assert [g.value for g in compact_gauges(lost)] == [NA, NA, NA, NA]
    assert detail_parts(lost)[0][1] is Level.CRIT
    # Known limits stay beside the unknown values; unknown limits are not spelled out twice.
    assert [g.value for g in gauges(lost)][1:3] == ["n/a/80.0GiB", "n/a/400W"]
    blank = card(
        lost=True, memory=Memory(total=None, used=None), power=Power(draw=None, limit=None)
    )
    assert [g.value for g in gauges(blank)][1:3] == [NA, NA]
    assert gauges(card(power=Power(draw=250.0, limit=None)))[2].value == "250W"


def test_sparkline_uses_a_fixed_scale_gaps_and_left_padding() -> None:
    assert sparkline([0.0, 50.0, 100.0], 3, 100.0) == "▁▅█"
    assert sparkline([10.0, 10.0], 4, 100.0) == "  ▁▁"
    assert sparkline([100.0, math.nan, 400.0], 3, 200.0) == "▅ █"
    assert sparkline(array("f", [1.0] * 50), 5, 1.0) == "█████"
    assert sparkline([1.0], 3, None) == "   "
    assert sparkline([1.0], 0, 1.0) == ""


def test_detail_line_names_missing_values_and_their_reasons() -> None:
    gpu = card(
        fan_speed=None,
        power=Power(draw=None, limit=None),
        throttle_reasons=("hw_thermal_slowdown",),
        unavailable=(("fan_speed", Reason.NOT_SUPPORTED), ("power.draw", Reason.NO_PERMISSION)),
    )
    parts = detail_parts(gpu)
    text = " · ".join(part for part, _ in parts)
    assert "fan n/a (not supported)" in text
    assert "power: no permission" in text
    assert ("throttle: hw thermal slowdown", Level.CRIT) in parts
    line = detail_line(PanelState(gpu, {}), 60)
    assert width_of(line) <= 60 and plain(line).endswith("…")


@pytest.mark.parametrize("width", [60, 76, 116, 200])
def test_full_lines_fill_the_width_exactly_or_less(width: int) -> None:
    series = {m: array("f", [float(i) for i in range(300)]) for m in Metric}
    lines = full_lines(PanelState(card(), series), width)
    assert len(lines) == 3
    assert all(width_of(line) <= width for line in lines)
    assert "GPU   50%" in plain(lines[0]) and "20.00/80.00GiB" in plain(lines[0])
    assert "200W/400W" in plain(lines[1]) and "50C/90C" in plain(lines[1])


@pytest.mark.parametrize("width", [60, 80, 118, 160])
def test_compact_line_lines_up_with_its_header(width: int) -> None:
    state = PanelState(card(), {m: array("f", [30.0] * 100) for m in Metric})
    (line,) = compact_line(state, width, 14)
    header = compact_header(width, 14)
    assert width_of(line) <= width and width_of(header) <= width
    assert plain(line).index("50%") + 3 <= plain(header).index("MEMORY") + 1
    assert short_name("NVIDIA GeForce RTX 3090") == "RTX 3090"


@pytest.mark.parametrize("width", [80, 81, 83, 100])
async def test_compact_titles_stand_over_their_columns_on_screen(width: int) -> None:
    app = live_app([eight_gpus(load(CAPTURES / "rtx3090x4-procs-v12.xml"))])
    async with app.run_test(size=(width, 24)) as pilot:
        await pilot.pause()
        assert app.main_screen.has_class("-compact")
        grid = app.main_screen.query_one(GpuGrid)
        header = grid._header_line
        line = app.main_screen.query_one(GpuPanel)._lines[0]
    assert header is not None

    def starts(parts: tuple[tuple[str, str], ...], first: int, step: int) -> list[int]:
        # Where each gauge's part begins, past its leading space; the rules between columns
        # are not gauge parts.
        offsets = [sum(len(text) for text, _ in parts[:i]) + 1 for i in range(len(parts))]
        kept = [o for o, part in zip(offsets, parts, strict=True) if part != COLUMN_RULE]
        return kept[first::step][:4]

    # Titles are parts 2..5 of the header; the values parts 2, 4, 6, 8 of a line (each
    # value followed by its sparkline).
    assert starts(header, 2, 1) == starts(line, 2, 2)


def test_a_cut_line_ends_in_an_ellipsis_after_a_word_never_a_separator() -> None:
    from gputop.ui.render.panel_lines import fit_line

    parts = (("fan 30%", "dim"), (" · ", "dim"), ("P2", "value"), (" · ", "dim"), ("sm", "dim"))
    # Room runs out just after a separator: it would dangle; the cut backs up to the word.
    assert plain(fit_line(parts, 14)) == "fan 30% · P2…"
    assert plain(fit_line(parts, 10)) == "fan 30%…"
    assert plain(fit_line(parts, 11)) == "fan 30%…"
    # A word cut in the middle keeps what fits, and the ellipsis takes the cut part's role.
    assert fit_line(parts, 12)[-1] == ("P…", "value")
    # Whole lines, and lines that lose only blank padding, are not marked.
    assert fit_line(parts, 40) == parts
    padded = (("GPU 50%", "value"), ("      ", "dim"))
    assert fit_line(padded, 9) == (("GPU 50%", "value"), ("  ", "dim"))


def test_badges_say_what_is_wrong_before_the_bus_id() -> None:
    gpu = card(pci_bus_id="00000000:01:00.0")
    assert badge(PanelState(gpu, {})).strip() == "00000000:01:00.0"
    assert badge(PanelState(dataclasses.replace(gpu, lost=True), {})).strip() == "LOST"
    assert badge(PanelState(gpu, {}, gone=True)).strip() == "GONE"
    assert badge(PanelState(dataclasses.replace(gpu, stale=True), {})).strip() == "STALE"


def test_a_gpu_missing_from_the_latest_snapshot_is_shown_gone() -> None:
    first = Snapshot(timestamp=None, gpus=(card(index=0, uuid="A"), card(index=1, uuid="B")))
    latest = Snapshot(timestamp=None, gpus=(card(index=0, uuid="A"),))
    entries = panel_entries(Tick(seq=1, snapshot=latest, window=(first, latest)))
    assert [(key, gone) for key, _, gone in entries] == [("A", False), ("B", True)]


def test_a_gpu_first_known_by_its_index_alone_is_not_shown_gone() -> None:
    # A first sample that missed its deadline knew only the index; the next has the UUID.
    first = Snapshot(timestamp=None, gpus=(card(index=0, uuid=None), card(index=1, uuid=None)))
    latest = Snapshot(timestamp=None, gpus=(card(index=0, uuid="A"), card(index=1, uuid="B")))
    entries = panel_entries(Tick(seq=1, snapshot=latest, window=(first, latest)))
    assert [(key, gone) for key, _, gone in entries] == [("A", False), ("B", False)]
    # One that went away while known only by its index is still shown gone.
    fewer = Snapshot(timestamp=None, gpus=(card(index=0, uuid="A"),))
    entries = panel_entries(Tick(seq=2, snapshot=fewer, window=(first, fewer)))
    assert [(key, gone) for key, _, gone in entries] == [("A", False), ("index:1", True)]


def test_replaying_captures_of_several_machines_piles_up_no_gone_gpus() -> None:
    # Replaying snapshots/ (eleven machines) showed every earlier machine's GPUs as GONE.
    from gputop.pipeline.commands import Seek, Step
    from gputop.sources.playback.replay import ReplayPlayer
    from gputop.sources.smi.recording import Recording

    with Recording.open(CAPTURES) as recording:
        pipeline = tui_pipeline(ReplayFeed(ReplayPlayer(recording, paused=True)))
        tick = pipeline.start()
        for _ in range(len(recording) - 1):
            pipeline.apply(Step(1))
            tick = pipeline.tick()
            entries = panel_entries(tick)
            assert not [key for key, _, gone in entries if gone], tick.snapshot.gpus[0].name
            assert [gpu for _, gpu, _ in entries] == sorted(
                tick.snapshot.gpus, key=lambda gpu: gpu.index
            )
        # A seek rebuilds the window from the documents before it: only this machine's.
        pipeline.apply(Seek(0))
        pipeline.apply(Seek(len(recording) - 1))
        assert [s.gpus for s in pipeline.tick().window] == [tick.snapshot.gpus]


@pytest.mark.parametrize(
    ("size", "gpus", "compact", "wide"),
    [((120, 40), 1, False, False), ((120, 40), 4, False, False), ((120, 40), 8, True, False),
     ((80, 24), 1, False, False), ((80, 24), 4, True, False), ((200, 56), 8, False, True),
     ((200, 56), 1, False, False), ((60, 40), 1, True, False), ((120, 40), 6, True, False)],
)  # fmt: skip
def test_layout_by_terminal_size_and_gpu_count(
    size: tuple[int, int], gpus: int, compact: bool, wide: bool
) -> None:
    assert choose_layout(size[0], size[1], gpus, replaying=False) == (compact, wide)


async def test_resizing_switches_between_full_compact_and_two_columns() -> None:
    app = live_app([eight_gpus(load(CAPTURES / "rtx3090x4-procs-v12.xml"))])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        assert screen.has_class("-compact") and not screen.has_class("-wide")
        panel = screen.query(GpuPanel).first()
        # One line per GPU, and its detail line beneath: 40 rows have room for both.
        assert panel.outer_size.height == 2
        await pilot.resize_terminal(200, 56)
        await pilot.pause()
        assert screen.has_class("-wide") and not screen.has_class("-compact")
        assert panel.outer_size.height == 5
        columns = {p.region.x for p in screen.query(GpuPanel)}
        assert len(columns) == 2


async def test_unchanged_panels_are_not_repainted() -> None:
    snapshot = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    app = live_app([snapshot])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        panels = screen.query_one(GpuGrid).panels
        tick = Tick(seq=99, snapshot=snapshot, history=EMPTY_VIEW, window=(snapshot,))
        screen.show_tick(tick)
        await pilot.pause()
        shown = [p.paints for p in panels]
        screen.show_tick(dataclasses.replace(tick, seq=100))
        await pilot.pause()
        repeated = [p.paints for p in panels]
        gpu0 = dataclasses.replace(
            snapshot.gpus[0], temperature=Temperature(gpu=93.0, slowdown=95.0)
        )
        hotter = dataclasses.replace(snapshot, gpus=(gpu0, *snapshot.gpus[1:]))
        screen.show_tick(Tick(seq=101, snapshot=hotter, window=(hotter,)))
        await pilot.pause()
        changed = [p.paints for p in panels]
    assert repeated == shown
    # Only the line holding the temperature is drawn again, not the panel's other lines.
    assert changed[0] == shown[0] + 1
    assert changed[1:] == shown[1:]


async def test_a_changed_temperature_repaints_only_its_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textual.geometry import Region
    from textual.widget import Widget

    import gputop.ui.widgets.gpu_panel as panel_module
    from gputop.ui.compat import repaint_regions as repaint

    snapshot = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    app = live_app([snapshot])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        panel = screen.query_one(GpuGrid).panels[0]
        screen.show_tick(Tick(seq=99, snapshot=snapshot, history=EMPTY_VIEW, window=(snapshot,)))
        await pilot.pause()
        asked: list[tuple[Region, ...]] = []
        refresh = panel.refresh
        relayed: list[bool] = []
        """Set while ``repaint_regions`` hands the regions on (to ``refresh`` when its patch
        is off): asked once, counted once."""

        def spy(*regions: Region, **options: bool) -> GpuPanel:
            if not relayed:
                asked.append(regions)
            return refresh(*regions, **options)

        def spy_regions(widget: Widget, regions: list[Region]) -> None:
            if widget is panel:
                asked.append(tuple(regions))
            relayed.append(True)
            try:
                repaint(widget, regions)
            finally:
                relayed.pop()

        panel.refresh = spy  # type: ignore[method-assign]
        monkeypatch.setattr(panel_module, "repaint_regions", spy_regions)
        temperature = snapshot.gpus[0].temperature
        assert temperature.gpu is not None
        warmer = dataclasses.replace(temperature, gpu=temperature.gpu + 1)
        gpu0 = dataclasses.replace(snapshot.gpus[0], temperature=warmer)
        hotter = dataclasses.replace(snapshot, gpus=(gpu0, *snapshot.gpus[1:]))
        screen.show_tick(Tick(seq=101, snapshot=hotter, window=(hotter,)))
        await pilot.pause()
        lines = [panel.render_line(y).text for y in range(3)]
    # One region on one line, inside the temperature figure: not the name and gauges
    # before it (only the digits that changed go out).
    assert len(asked) == 1 and len(asked[0]) == 1
    (region,) = asked[0]
    figure = f"{warmer.gpu:.0f}C"
    start = lines[region.y].find(figure)
    assert region.height == 1 and start > 0
    assert start <= region.x and region.right <= start + len(figure)


async def test_header_shows_driver_cuda_and_mode_but_hides_host_and_clock_in_tests() -> None:
    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 3)
    stream = [dataclasses.replace(s, host="secret-host") for s in stream]
    app = live_app(stream)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        header = app.main_screen.query_one("#header")
        text = header.plain  # type: ignore[attr-defined]
        assert "driver 550.90.07" in text and "CUDA 12.4" in text and "live" in text
        assert "every 1s" in text
        assert "secret-host" not in text
        assert datetime(2024, 9, 18, 21, 34, 12).strftime("%H:%M:%S") not in text


@pytest.mark.parametrize("width", [80, 60])
async def test_a_narrow_header_cuts_its_left_half_and_keeps_the_mode_whole(width: int) -> None:
    from gputop.ui.widgets.status_line import StatusHeader
    from support.apps import replay_app

    label = "a100-sxm4-80gb-mig-v12.xml"
    app = replay_app([load(CAPTURES / label)], source_label=label)
    async with app.run_test(size=(width, 24)) as pilot:
        await pilot.pause()
        header = app.main_screen.query_one(StatusHeader)
        line = header.render_line(0).text
    assert len(line) == width
    # The halves never run together ("GPUs 1replay"): the left one gives way, marked "…".
    assert line.endswith(f"…  replay · {label} ")
    assert line.startswith(" gputop  driver 535.5")


def test_a_header_too_narrow_for_its_right_half_shows_the_left_cut_at_its_end() -> None:
    from gputop.ui.widgets.status_line import Bar

    bar = Bar()
    bar._left = ((" gputop", "title"), ("  driver 535.54.03  CUDA 12.2", "text"))
    bar._right = (("replay", "accent"), (" · a-long-recording-name.xml ", "text"))
    # At 40 cells the right half would leave the left 2: it goes, rather than run into it.
    assert bar._parts(40) == bar._left
    # At 60 both fit once the left is cut.
    line = "".join(text for text, _ in bar._parts(60))
    assert line == " gputop  driver 535.54…  replay · a-long-recording-name.xml "
    assert len(line) == 60
    # Narrower than the left half itself: cut like a panel line, ending in "…".
    assert "".join(text for text, _ in bar._parts(20)) == " gputop  driver 535…"
    bar._right = ()
    assert "".join(text for text, _ in bar._parts(20)) == " gputop  driver 535…"


async def test_the_clock_sits_left_and_a_new_second_repaints_only_its_digits() -> None:
    from textual.geometry import Region

    from gputop.ui.widgets.status_line import StatusHeader

    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 3)
    settings = dataclasses.replace(FIXED_SETTINGS, show_clock=True)
    app = live_app(stream, settings=settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        header = app.main_screen.query_one(StatusHeader)
        first = stream[0].timestamp
        assert first is not None
        assert header.plain.startswith(f" gputop {first:%H:%M:%S}  driver")
        asked: list[tuple[Region, ...]] = []
        refresh = header.refresh

        def spy(*regions: Region, **options: bool) -> StatusHeader:
            asked.append(regions)
            return refresh(*regions, **options)

        header.refresh = spy  # type: ignore[method-assign]
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        second = stream[1].timestamp
        assert second is not None
        assert f"{second:%H:%M:%S}" in header.plain
    # Only the clock's changed digits go out again, not the title before them.
    before, after = f" gputop {first:%H:%M:%S}", f" gputop {second:%H:%M:%S}"
    changed = [x for x, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
    assert changed and changed[0] > len(" gputop ")
    assert asked == [(Region(changed[0], 0, changed[-1] + 1 - changed[0], 1),)]


async def test_a_failing_source_is_shown_in_the_header_and_recovers() -> None:
    from gputop.errors import GputopError
    from gputop.pipeline.loop import ManualLoop
    from gputop.ui.app import GputopApp
    from support.apps import FIXED_SETTINGS

    snapshot = load(CAPTURES / "tesla-t4-v11.xml")

    class Flaky:
        polls = 0

        def poll(self) -> Snapshot:
            self.polls += 1
            if self.polls == 2:
                raise GputopError("NVML: driver went away")
            return snapshot

        def close(self) -> None:
            pass

    loop = ManualLoop(tui_pipeline(LiveFeed(Flaky())))
    app = GputopApp(loop, FIXED_SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        header = app.main_screen.query_one("#header")
        loop.advance()
        await pilot.pause()
        assert "⚠ NVML: driver went away" in header.plain  # type: ignore[attr-defined]
        assert app.main_screen.query_one(GpuPanel).gpu is not None
        loop.advance()
        await pilot.pause()
        assert "driver went away" not in header.plain  # type: ignore[attr-defined]


async def test_a_dead_poller_is_announced() -> None:
    from gputop.ui.messages import SourceFailed

    app = live_app([load(CAPTURES / "tesla-t4-v11.xml")])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.post_message(SourceFailed(RuntimeError("boom")))
        await pilot.pause()
        header = app.main_screen.query_one("#header")
        assert "updates stopped: RuntimeError: boom" in header.plain  # type: ignore[attr-defined]
        assert any("updates stopped" in n.message for n in app._notifications)


def test_panel_cell_widths_match_rich_for_what_panels_draw_and_for_wide_text() -> None:
    from rich.cells import cell_len

    from gputop.ui.widgets.line_strip import cell_width

    for text in ("▁▂▃▄▅▆▇█", "12.3G · 45%", "…─", "日本語 GPU", "", "é", " │", "9.7G  ▁▂▃"):
        assert cell_width(text) == cell_len(text)
    assert cell_width("日本") == 4


def test_a_compact_gpu_row_is_measured_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich's general measure costs more than the rest of a line; a compact row (column rules
    and sparklines beside figures) never needs it."""
    from rich.style import Style

    import gputop.ui.widgets.line_strip as line_strip

    measured: list[str] = []

    def counted(text: str) -> int:
        measured.append(text)
        return len(text)

    monkeypatch.setattr(line_strip, "cell_len", counted)
    parts = (("  0 H100 80GB HBM3  n/a", "name"), (" │", "dim"), ("  9.77/79.65G  ▁▁▂▃", "bar"))
    strip = line_strip.line_strip(
        parts, {"name": Style(), "dim": Style(), "bar": Style()}, 60, Style()
    )
    assert strip.cell_length == 60
    assert changed_span(parts, parts[:2], 60) == (25, 44)
    assert measured == []


WAITING = (
    "waiting: 1 process holds 21.9GiB but utilization averaged 8% over the last 30s "
    "(likely input-bound; llama-server at 100% CPU, 1 of 32 cores busy)"
)


def test_a_diagnosis_too_long_ends_after_a_whole_clause() -> None:
    state = PanelState(card(), {}, finding=(WAITING, "warn"))
    # At 120 columns the panel has 116 cells: the sentence ends at its last whole clause.
    assert plain(detail_line(state, 116)) == (
        "waiting: 1 process holds 21.9GiB but utilization averaged 8% over the last 30s "
        "(likely input-bound…"
    )
    assert plain(detail_line(state, 90)) == (
        "waiting: 1 process holds 21.9GiB but utilization averaged 8% over the last 30s…"
    )
    assert plain(detail_line(state, len(WAITING))) == WAITING


@pytest.mark.parametrize("width", range(12, len(WAITING)))
def test_a_cut_diagnosis_keeps_whole_words_so_no_number_is_cut_in_half(width: int) -> None:
    state = PanelState(card(), {}, finding=(WAITING, "warn"))
    text = plain(detail_line(state, width))
    assert len(text) <= width and text.endswith("…")
    words = text.removesuffix("…").split()
    assert [w.strip(";,(:") for w in words] == [
        w.strip(";,(:") for w in WAITING.split()[: len(words)]
    ]
