"""The footer lets go of the keys it drew before (issue 17, RSS): Textual's footer draws its
keys again at each change of the bindings, and each key it drew stayed alive through the
footer's ``compact`` watcher, 14 keys at every change of focus for the life of the app.

And it draws them again only when what they show changed, each key styled once as it mounts
(issue 30): Textual's footer drew all of them at every signal that the bindings changed, two
for one move of the focus, and styled each key three times."""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gputop.cli.tui import tui_pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.compat import PALETTE_KEY
from gputop.ui.widgets.gpu_panel import GpuPanel
from support.apps import FIXED_SETTINGS, CyclingSource, load

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


@contextlib.asynccontextmanager
async def _started() -> AsyncIterator[tuple[GputopApp, Pilot[int], Footer]]:
    """The app on a live box of the four RTX 3090s of the capture, drawn at 120x40: the app,
    its pilot and its footer."""
    pipeline = tui_pipeline(LiveFeed(CyclingSource([load(CAPTURE)])))
    app = GputopApp(ManualLoop(pipeline), FIXED_SETTINGS, first_tick=pipeline.start())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        yield app, pilot, app.screen.query_one(Footer)


def _keys_alive() -> int:
    gc.collect()
    return sum(1 for thing in gc.get_objects() if isinstance(thing, FooterKey))


@pytest.mark.patch("quiet_footer")
async def test_moving_the_focus_keeps_only_the_keys_on_screen() -> None:
    async with _started() as (_, pilot, footer):
        seen: weakref.WeakSet[FooterKey] = weakref.WeakSet()
        drawn = 0
        for _ in range(8):
            await pilot.press("tab")  # to the other area, with its own keys: drawn anew
            await pilot.pause()
            keys = list(footer.query(FooterKey))
            drawn += sum(1 for key in keys if key not in seen)
            seen.update(keys)
            del keys
        on_screen = len(footer.query(FooterKey))
        assert on_screen > 5
        assert drawn > 4 * on_screen
        assert _keys_alive() == on_screen


@pytest.mark.patch("still_footer")
async def test_keys_are_drawn_once_a_change_and_styled_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with _started() as (app, pilot, footer):
        styled: list[FooterKey] = []
        apply = app.stylesheet.apply

        def counted(node: Any, *args: Any, **kwargs: Any) -> None:
            if isinstance(node, FooterKey):
                styled.append(node)
            apply(node, *args, **kwargs)

        monkeypatch.setattr(app.stylesheet, "apply", counted)
        shown = [(key.key, key.description) for key in footer.query(FooterKey)]
        changes = stills = 0
        for _ in range(8):  # through the GPU panels (the same keys) to the process table
            before = set(footer.query(FooterKey))
            styled.clear()
            app.screen.focus_next()
            await pilot.pause()
            keys = list(footer.query(FooterKey))
            now = [(key.key, key.description) for key in keys]
            drawn = [key for key in keys if key not in before]
            if now == shown:
                stills += 1
                assert drawn == [], f"{type(app.focused).__name__}: the same keys drawn again"
            else:
                changes += 1
                assert len(drawn) == len(keys) > 5
                # Each new key styled as it mounts; one may be styled again as the
                # footer's layout settles.
                assert len(styled) <= len(drawn) + 1
                assert not any(
                    key.has_class("-compact") for key in keys if not key.has_class(PALETTE_KEY)
                )
            shown = now
        assert changes >= 2
        assert stills >= 2


@pytest.mark.patch("still_footer")
async def test_a_change_of_the_palette_key_alone_is_drawn() -> None:
    async with _started() as (app, pilot, footer):
        first, second = list(app.screen.query(GpuPanel))[:2]
        first.focus()
        await pilot.pause()
        assert any(key.has_class(PALETTE_KEY) for key in footer.query(FooterKey))
        footer.show_command_palette = False
        second.focus()  # the same bindings as the first panel's
        await pilot.pause()
        assert app.focused is second
        assert footer.query(FooterKey)
        assert not any(key.has_class(PALETTE_KEY) for key in footer.query(FooterKey))
