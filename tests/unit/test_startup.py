"""Collection is held while gputop starts and always given back."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop.cli import code_cache, entry, startup
from gputop.cli import main as cli

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


PYTHONS_THRESHOLD = gc.get_threshold()
"""Python's own collection thresholds, read as the tests are collected: the suite sets its
own once they are (tests/conftest.py)."""


@pytest.fixture(autouse=True)
def _pythons_collection() -> Iterator[None]:
    """Each test starts from Python's settings, nothing frozen (the suite's process runs as
    gputop does after its start: tests/conftest.py), and the suite's come back after it."""
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.unfreeze()
    gc.set_threshold(*PYTHONS_THRESHOLD)
    yield
    startup.release_collection()
    # What a test froze (an app it ran among it) is let go and its garbage freed before the
    # suite's own freeze is made again: frozen, garbage would stay for the worker's life.
    gc.unfreeze()
    gc.collect()
    gc.enable()
    gc.set_threshold(*threshold)
    if frozen:
        gc.freeze()


def test_hold_then_release_freezes_what_exists_and_collects_again() -> None:
    startup.hold_collection()
    assert not gc.isenabled()
    startup.release_collection()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == startup.YOUNG_GENERATION


class _Cycle:
    """Garbage only the collector frees: it refers to itself."""

    def __init__(self) -> None:
        self.itself = self


def test_the_garbage_of_the_start_is_freed_not_frozen() -> None:
    """Start-up leaves garbage in cycles (about 35,000 objects on the 8x7 box); frozen, it
    would stay for the life of the process, and the memory it holds with it."""
    startup.hold_collection()
    garbage = weakref.ref(_Cycle())
    kept = _Cycle()
    startup.release_collection()
    assert garbage() is None
    assert kept.itself is kept


def test_release_without_hold_changes_nothing() -> None:
    frozen, threshold = gc.get_freeze_count(), gc.get_threshold()
    startup.release_collection()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    assert gc.get_threshold() == threshold


def test_hold_leaves_a_collector_someone_else_turned_off_alone() -> None:
    gc.disable()
    startup.hold_collection()
    startup.release_collection()
    assert not gc.isenabled()


def test_a_headless_run_collects_again_before_it_works(capsys: pytest.CaptureFixture[str]) -> None:
    startup.hold_collection()
    assert cli.main(["--replay", str(CAPTURE), "--once"]) == 0
    assert gc.isenabled()
    assert "RTX 3090" in capsys.readouterr().out


def test_the_entry_point_gives_collection_back_when_the_run_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []

    def failing_main() -> int:
        seen.append(gc.isenabled())
        seen.append("exec" in vars(dataclasses))  # the code cache's window, open
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "main", failing_main)
    with pytest.raises(RuntimeError):
        entry.run()
    assert seen == [False, code_cache.enabled()]
    assert gc.isenabled()
    assert "exec" not in vars(dataclasses)  # the code cache's window closed too


async def test_the_tui_collects_again_once_its_first_frame_is_drawn() -> None:
    from support.apps import load, replay_app

    app = replay_app([load(CAPTURE)], after_first_frame=startup.release_collection)
    startup.hold_collection()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert gc.isenabled()
        assert "MEM" in app.screen.query_one("GpuPanel").render_line(0).text
