"""Fixtures shared by every test directory."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from gputop.cli import startup
from gputop.patches import stock_names

REPO_ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = REPO_ROOT / "snapshots"
TESTS = Path(__file__).resolve().parent

# Property tests: Hypothesis's "default" profile (100 examples a test, new ones each run) is
# what ``scripts/test`` runs. CI (``.ci/run`` sets ``CI=true``, as CI services do) runs
# Hypothesis's own "ci" profile: the same 100 examples, derandomized (a red CI is red again
# when run again, and a green one is not luck), no deadline (a loaded 2-core machine is not a
# slow test), no example database. "thorough", for a change to a reader or a property, gives
# each test ten times that: ``pytest --hypothesis-profile thorough``. A test whose examples
# are costly (a UI run, a subprocess) sets a smaller ``max_examples`` of its own.
settings.register_profile("thorough", max_examples=1000)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the exhaustive versions of sampled tests (marked slow)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test by its directory; leave ``slow`` tests out unless ``--slow``; skip the
    tests of a patch of Textual that ``GPUTOP_STOCK_TEXTUAL`` turns off."""
    _mark_and_select(config, items)
    _skip_tests_of_patches_off(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The tests' process collects garbage as gputop does once it has started
    (``gputop.cli.startup``): what exists once the tests are collected (the modules, the
    test items) is frozen, so that full collections skip it, and the young generation is
    larger. With Python's defaults, the apps of the UI tests set off a full collection of
    the whole process every few tests: ``tests/ui`` took 0.79-0.85x the time this way, and
    0.72-0.90x the CPU (benchmarks/README, the suite's time)."""
    startup.hold_collection()
    startup.release_collection()


def _mark_and_select(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    run_slow = bool(config.getoption("--slow"))
    for item in items:
        part = Path(str(item.path)).relative_to(TESTS).parts[0]
        if part in ("unit", "ui", "snapshot", "e2e"):
            item.add_marker(getattr(pytest.mark, part))
        if item.get_closest_marker("slow") is not None and not run_slow:
            left.append(item)
        else:
            kept.append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture
def capture_path() -> Callable[[str], Path]:
    """``capture_path(name)``: the bundled capture ``snapshots/<name>``."""

    def path(name: str) -> Path:
        return SNAPSHOTS / name

    return path


def pytest_configure(config: pytest.Config) -> None:
    """Under ``GPUTOP_STOCK_TEXTUAL``, the baseline of a snapshot test skipped there (below)
    is unused by design: said as a warning, not failed (syrupy's ``--snapshot-warn-unused``)."""
    if stock_names() != frozenset() and hasattr(config.option, "warn_unused_snapshots"):
        config.option.warn_unused_snapshots = True
    _children_take_ctrl_c()


def _children_take_ctrl_c() -> None:
    """The commands the tests start stop on SIGINT, as they do in a user's terminal, even
    when pytest itself was started with SIGINT ignored: pytest-xdist's workers ignore it (so
    that Ctrl-C reaches the controller), and so does a job a shell starts in the background.
    An ignored signal stays ignored in a child after ``exec``; a handled one is reset."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _skip_tests_of_patches_off(items: list[pytest.Item]) -> None:
    """Under ``GPUTOP_STOCK_TEXTUAL`` (CI's second run of the UI and snapshot tests), a test
    of what one of gputop's patches of Textual does (``@pytest.mark.patch("name")``) is
    skipped when that patch is off, saying so: stock Textual does not do it."""
    off = stock_names()
    if off == frozenset():
        return
    for item in items:
        for marker in item.iter_markers("patch"):
            name = str(marker.args[0])
            if off is None or name in off:
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"tests gputop's {name} patch of Textual, off under "
                        "GPUTOP_STOCK_TEXTUAL (stock Textual does not do this)"
                    )
                )
