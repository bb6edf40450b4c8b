"""gputop's footer draws what Textual's ``Footer`` draws, cell for cell (issue 30 §9), in one
widget: the main screen (live and a replay) and an app with every kind of key, at widths
from the palette's key alone to a wide terminal, with a key under the mouse, after a theme
change, the wheel, a resize, a change of the keys and the terminal's loss of focus; a click
presses the key, a tooltip says what it does, and the keys are laid out again only when what
they show changes. (The history and fleet screens' footers are in the snapshot SVGs.)

Textual's footer is the yardstick here: the same app is drawn with it in gputop's place."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
import textual.widgets
from rich.cells import cell_len
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widget import Widget

import gputop.ui.screens.main
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.widgets.footer import Footer
from support.apps import CyclingSource, eight_gpus, load, replay_app, started_app, varied_stream
from support.sizes import resize, settle

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"
WIDTHS = [1, 5, 11, 12, 13, 20, 30, 45, 60, 80, 100, 120, 150]
"""The palette's key (12 cells) cut, alone and with a key beside it; keys cut in the middle
of a key, a group and a label; everything with room to spare."""

Cells = list[tuple[str, str]]


def bottom_line(app: App[Any]) -> Cells:
    """The terminal's last line, cell by cell: (character, style as the terminal gets it)."""
    strip = app.screen._compositor.render_strips()[-1]
    return [(char, str(segment.style)) for segment in strip for char in segment.text]


def replay_box() -> GputopApp:
    stream = varied_stream(eight_gpus(load(CAPTURE)), 20)
    return replay_app(stream, position=5, paused=True, source_label="x.xml")


def live_box() -> GputopApp:
    return started_app(LiveFeed(CyclingSource([load(CAPTURE)])))


class KeysApp(App[None]):
    """Every kind of key the footer draws: with words, in a compact group and in one
    that is not, a key offered but not enabled, one with a tooltip."""

    footer_class: ClassVar[type[Widget]] = Footer
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "bell", "Plain"),
        Binding("left", "bell('l')", "Back", key_display="<", group=Binding.Group("Step", True)),
        Binding("right", "bell('r')", "Forth", key_display=">", group=Binding.Group("Step", True)),
        Binding("minus", "bell('-')", "Less", key_display="-", group=Binding.Group("Zoom")),
        Binding("plus", "bell('+')", "More", key_display="+", group=Binding.Group("Zoom")),
        Binding("d", "nothing", "Dimmed"),
        Binding("t", "bell('t')", "Told", tooltip="says what it does"),
    ]

    def compose(self) -> ComposeResult:
        yield self.footer_class()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "nothing" else True

    def action_nothing(self) -> None:
        """Never reached: the key is not enabled."""


@contextlib.asynccontextmanager
async def started(
    make: Callable[[], App[Any]], textuals: bool, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Pilot[Any]]:
    """``make()`` running at 150x40, drawn with gputop's footer or Textual's."""
    with monkeypatch.context() as patched:
        if textuals:
            patched.setattr(gputop.ui.screens.main, "Footer", textual.widgets.Footer)
            patched.setattr(KeysApp, "footer_class", textual.widgets.Footer)
        app = make()
        async with app.run_test(size=(150, 40)) as pilot:
            await keys_drawn(pilot)
            yield pilot


async def settled_line(pilot: Pilot[Any], ready: Callable[[Cells], bool], what: str) -> Cells:
    """The bottom line once ``ready`` accepts it and it stays the same from one cycle to the
    next; fails saying ``what`` never settled."""
    line: Cells = []
    for _ in range(100):
        await pilot.pause()
        before, line = line, bottom_line(pilot.app)
        if line == before and ready(line):
            return line
    raise AssertionError(f"{what} never settled: {text(line)!r}")


async def keys_drawn(pilot: Pilot[Any]) -> None:
    """Wait until the footer shows its keys and they stay: Textual's draws them after the
    first frame, and on a loaded machine a few cycles later."""
    await settled_line(pilot, lambda line: "^p palette" in text(line), "the footer's keys")


async def lines_at(pilot: Pilot[Any], widths: Sequence[int]) -> dict[int, Cells]:
    """The bottom line at each width, once it is laid out at that width and stays: on a
    loaded machine a frame drawn before the resize is laid out can still be the last."""
    drawn = {}
    for width in widths:
        await resize(pilot, width, 40)
        drawn[width] = await settled_line(pilot, as_wide_as(width), f"the bottom line at {width}")
    return drawn


def as_wide_as(width: int) -> Callable[[Cells], bool]:
    """Whether a line takes ``width`` cells of the terminal."""
    return lambda line: cell_len(text(line)) == width


async def both(
    make: Callable[[], App[Any]], monkeypatch: pytest.MonkeyPatch, widths: Sequence[int]
) -> tuple[dict[int, Cells], dict[int, Cells]]:
    """The bottom line at each width drawn with Textual's footer, then with gputop's."""
    async with started(make, True, monkeypatch) as pilot:
        theirs = await lines_at(pilot, widths)
    async with started(make, False, monkeypatch) as pilot:
        assert isinstance(pilot.app.screen.query_one("Footer"), Footer)
        ours = await lines_at(pilot, widths)
    return theirs, ours


def text(cells: Cells) -> str:
    return "".join(char for char, _ in cells)


@pytest.mark.parametrize(
    "make", [replay_box, live_box, KeysApp], ids=["replay", "live", "every kind of key"]
)
async def test_the_footer_draws_what_textuals_draws_at_every_width(
    make: Callable[[], App[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs, ours = await both(make, monkeypatch, WIDTHS)
    for width in WIDTHS:
        assert ours[width] == theirs[width], f"at {width}: {text(ours[width])!r}"
    assert "^p palette" in text(ours[150])
    assert text(ours[11]) == "^p palette "  # the key docked at the right, cut on its left


async def test_a_new_theme_draws_the_keys_in_its_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = []
    for textuals in (True, False):
        async with started(replay_box, textuals, monkeypatch) as pilot:
            before = bottom_line(pilot.app)
            pilot.app.theme = "textual-light"
            await pilot.pause()
            drawn.append((before, bottom_line(pilot.app)))
    (dark, light), ours = drawn
    assert ours == (dark, light) and light != dark


async def hovered(make: Callable[[], App[Any]], monkeypatch: pytest.MonkeyPatch, textuals: bool,
                  places: Sequence[int]) -> list[Cells]:  # fmt: skip
    """The bottom line at 150 columns with the mouse at each of ``places`` on it in turn."""
    async with started(make, textuals, monkeypatch) as pilot:
        drawn = []
        for x in places:
            await pilot.hover(offset=(x, 39 if x else 0))  # (0, 0): the header
            await pilot.pause()
            drawn.append(bottom_line(pilot.app))
        return drawn


async def test_a_key_under_the_mouse_is_drawn_as_textual_draws_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Away from the footer; a key of a group, the group's label (not highlighted), keys
    # with words, the palette's key.
    places = [0, 1, 5, 9, 13, 140]
    theirs = await hovered(replay_box, monkeypatch, True, places)
    ours = await hovered(replay_box, monkeypatch, False, places)
    assert ours == theirs
    away = ours[0]
    assert [line != away for line in ours] == [False, True, False, True, True, True]


async def test_every_kind_of_key_under_the_mouse(monkeypatch: pytest.MonkeyPatch) -> None:
    async with started(KeysApp, False, monkeypatch) as pilot:
        line = text(bottom_line(pilot.app))
    places = [0, *(line.index(word) for word in ("Plain", "<", "-", "Zoom", "Dimmed", "Told"))]
    theirs = await hovered(KeysApp, monkeypatch, True, places)
    ours = await hovered(KeysApp, monkeypatch, False, places)
    assert ours == theirs


async def test_a_click_presses_the_key_and_a_key_not_enabled_rings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = replay_box()
    async with app.run_test(size=(150, 40)) as pilot:
        await pilot.pause()
        line = text(bottom_line(app))
        assert not app.main_screen.has_class("-mig")
        await pilot.click(offset=(line.index(" m MIG") + 2, 39))
        await settle(pilot)
        assert app.main_screen.has_class("-mig")
        await pilot.click(offset=(line.index("Step"), 39))  # a label: nothing
        await settle(pilot)
        assert app.screen is app.main_screen and app.main_screen.has_class("-mig")
        await pilot.click(offset=(line.index("^p"), 39))
        await settle(pilot)
        assert type(app.screen).__name__ == "CommandPalette"
    rung: list[str] = []
    keys = KeysApp()
    async with keys.run_test(size=(100, 5)) as pilot:
        monkeypatch.setattr(keys, "bell", lambda: rung.append("bell"))
        monkeypatch.setattr(keys, "action_bell", lambda *_: rung.append("action"))
        line = text(bottom_line(keys))
        await pilot.click(offset=(line.index("Dimmed"), 4))
        await pilot.click(offset=(line.index("Plain"), 4))
        await pilot.pause()
    assert rung == ["bell", "action"]


async def test_a_key_tells_its_tooltip_under_the_mouse(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = KeysApp()
    async with keys.run_test(size=(100, 5)) as pilot:
        footer = keys.query_one(Footer)
        line = text(bottom_line(keys))
        await pilot.hover(offset=(line.index("Told"), 4))
        assert footer.tooltip == "says what it does"
        await pilot.hover(offset=(line.index("<"), 4))  # a group's key: its words
        assert footer.tooltip == "Back"
        assert keys.screen._pointer_shape == "pointer"  # over a key, as over Textual's
        await pilot.hover(offset=(line.index("Plain"), 4))
        assert footer.tooltip is None
        await pilot.hover(offset=(line.index("^p"), 4))
        palette = keys.screen.active_bindings[keys.COMMAND_PALETTE_BINDING].binding
        assert footer.tooltip == (palette.tooltip or palette.description) != ""
        await pilot.hover(offset=(line.index("Step"), 4))  # a group's label
        assert keys.screen._pointer_shape == "default"


Step = tuple[str, Any]


async def play(pilot: Pilot[Any], steps: Sequence[Step]) -> list[Cells]:
    """The bottom line after each step: ("resize", width), ("hover", x) on the bottom line,
    ("wheel", an event class) there, ("key", a key pressed) or ("blur", None)."""
    app = pilot.app
    drawn = []
    mouse = 0
    for what, arg in steps:
        if what == "resize":
            await resize(pilot, arg, 40)
        elif what == "hover":
            mouse = arg
            await pilot.hover(offset=(arg, 39))
        elif what == "wheel":  # where the mouse is, as the terminal reports a wheel
            await pilot._post_mouse_events([arg], offset=(mouse, 39))
        elif what == "key":
            await pilot.press(arg)
        else:
            app.post_message(events.AppBlur())
        await pilot.pause()
        await app.animator.wait_until_complete()
        await pilot.pause()
        drawn.append(bottom_line(app))
    return drawn


DOWN, UP, RIGHT = events.MouseScrollDown, events.MouseScrollUp, events.MouseScrollRight
SCENES: dict[str, list[Step]] = {
    # Scrolled to the end and back a little, the mouse over the line: the key under it
    # changes as the line moves. Then wider than the line: scrolled back to the start.
    "wheel": [("resize", 100), ("hover", 30), *[("wheel", DOWN)] * 12, ("wheel", UP),
              ("wheel", RIGHT), ("resize", 200)],
    # The mouse over a key as the keys change under it (MIG tree, pause), and away.
    "keys change": [("hover", 62), ("key", "m"), ("key", "space"), ("hover", 148),
                    ("key", "m"), ("hover", 0)],
    # The terminal loses the focus: the keys stay.
    "blur": [("key", "tab"), ("blur", None), ("hover", 10)],
}  # fmt: skip


@pytest.mark.parametrize("scene", SCENES)
async def test_the_line_moves_as_textuals_does(scene: str, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = []
    for textuals in (True, False):
        async with started(replay_box, textuals, monkeypatch) as pilot:
            drawn.append(await play(pilot, SCENES[scene]))
    theirs, ours = drawn
    for step, (mine, yardstick) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == yardstick, f"{SCENES[scene][step]}: {text(mine)!r}"
    # What the steps did to the keys: moved them, changed them, or (blurred) nothing.
    assert len({text(line) for line in ours}) == {"wheel": 10, "keys change": 2, "blur": 1}[scene]


async def test_the_keys_are_laid_out_again_only_when_they_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    laid: list[int] = []
    lay_out = Footer._lay_out

    def counted(footer: Footer) -> Any:
        laid.append(1)
        return lay_out(footer)

    monkeypatch.setattr(Footer, "_lay_out", counted)
    app = live_box()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(Footer)
        assert len(laid) == 1 and not footer.children  # one widget, no widget a key
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        for _ in range(5):
            loop.advance()  # new values, the same keys
            await pilot.pause()
        app.screen.refresh_bindings()
        await pilot.pause()
        assert len(laid) == 1
        before = text(bottom_line(app))
        await pilot.press("tab")  # the processes: Tab now says "GPUs"
        await pilot.pause()
        assert len(laid) == 2 and text(bottom_line(app)) != before
