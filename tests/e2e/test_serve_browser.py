"""`gputop serve` in a real browser: Debian's Chromium, headless, driven by Selenium.

One browser serves the whole module (each test opens its own tab and closes the others;
the last starts one of its own, to see it leave nothing behind); each test starts its own
`gputop serve` on a free port, on the fake NVML for live views, and stops it (with its
viewer processes) whatever happens. What the page shows is read from the
xterm.js buffer; a screenshot of each is kept under ``.artifacts/serve/``.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputop.sources.smi.recording import Recording
from support.browser import (
    CHROMEDRIVER,
    CHROMIUM,
    browser,
    keep_screenshot,
    press,
    screen_text,
    serving,
    wait_for_screen,
)
from support.command import ROOT
from support.prometheus import running_prometheus
from support.prometheus import serving as exporters

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):  # pragma: no cover - CI installs both
    pytest.fail(
        "chromium and chromium-driver are required (scripts/install-system-deps)",
        pytrace=False,
    )

FOUR = "rtx3090x4-procs-v12.xml"
"""The live box the fake NVML plays: 4 RTX 3090s."""
SIX = ROOT / "snapshots" / "gtx1070x6-v9.xml"
"""A bundled capture of six GTX 1070s, served with --replay."""


@pytest.fixture(scope="module")
def chrome() -> Iterator[Any]:
    """One headless Chromium for the module."""
    with browser() as driver:
        yield driver


@pytest.fixture
def tab(chrome: Any) -> Iterator[Any]:
    """The browser on its first tab; afterwards every other tab is closed and the first goes
    blank, so every viewer this test opened hangs up."""
    first = chrome.window_handles[0]
    chrome.switch_to.window(first)
    try:
        yield chrome
    finally:
        for handle in chrome.window_handles:
            if handle != first:
                chrome.switch_to.window(handle)
                chrome.close()
        chrome.switch_to.window(first)
        chrome.get("about:blank")


def test_live_box_view_shows_every_gpu_as_a_live_view(tab: Any) -> None:
    with serving() as served:
        tab.get(served.url)
        text = wait_for_screen(
            tab,
            lambda t: all(f" {i} · NVIDIA GeForce RTX 3090" in t for i in range(4)),
            what="the four GPUs",
        )
        # The page hands the app the focus once it has drawn, without a click: the footer
        # names the keys (it stays empty while the app counts as blurred).
        footer = wait_for_screen(
            tab, lambda t: "q Quit" in t.splitlines()[-1], what="the footer's keys"
        ).splitlines()[-1]
        keep_screenshot(tab, "live-box")
    assert "? Help" in footer and "TERM" not in footer
    # A live view: the header says so, and there is no replay bar.
    header = text.splitlines()[0]
    assert "live" in header and "every 1s" in header
    assert "replay" not in text.lower().split("processes")[0]
    assert "read-only" in text


def test_the_usual_options_reach_the_served_view(tab: Any) -> None:
    with serving("--gpu", "1,3", "--interval", "2") as served:
        tab.get(served.url)
        text = wait_for_screen(
            tab, lambda t: " 1 · NVIDIA" in t and " 3 · NVIDIA" in t, what="GPUs 1 and 3"
        )
    assert " 0 · NVIDIA" not in text and " 2 · NVIDIA" not in text
    assert "every 2s" in text.splitlines()[0]


def test_replay_of_a_bundled_capture_shows_every_gpu(tab: Any) -> None:
    with Recording.open(SIX) as recording:
        gpus = recording.snapshot(0).gpus
    assert len(gpus) == 6
    with serving("--replay", str(SIX)) as served:
        tab.get(served.url)
        # Six GPUs in 1000 pixels: one row each ("  3 GTX 1070  100% ...").
        text = wait_for_screen(
            tab,
            lambda t: _gpu_rows(t) == [(gpu.index, gpu.name) for gpu in gpus],
            what="the six GPUs of the capture",
        )
        keep_screenshot(tab, "replay-six")
    assert SIX.name in text.splitlines()[0]


def _gpu_rows(text: str) -> list[tuple[int, str | None]]:
    """(index, full name) of each compact GPU row, whose name is the model's last words."""
    rows: list[tuple[int, str | None]] = []
    for line in text.splitlines():
        found = re.match(r"\s*(\d+) ([A-Z]+ \d+)\s", line)
        if found:
            rows.append((int(found[1]), f"GeForce {found[2]}"))
    return rows


def test_question_mark_opens_the_help_and_no_signal_key_is_offered(tab: Any) -> None:
    with serving() as served:
        tab.get(served.url)
        before = wait_for_screen(tab, lambda t: " 0 · NVIDIA" in t, what="a GPU")
        # The footer, with the process table focused, names no signal key.
        assert not any(word in before for word in ("TERM", "KILL")), before
        press(tab, "?")
        text = wait_for_screen(tab, lambda t: "gputop keys" in t, what="the help")
        keep_screenshot(tab, "help")
        assert "Processes" in text and "Filter" in text
        assert not any(word in text for word in ("TERM", "KILL", "INT ")), text
        # The interval is the server's: no interval keys either.
        assert "Poll faster" not in text
        press(tab, "\ue00c")  # Esc
        wait_for_screen(tab, lambda t: "gputop keys" not in t, what="the help closed")


def test_arrows_and_enter_reach_the_process_table(tab: Any) -> None:
    # The page's blur and focus while it loads left no widget focused: letters (the app's
    # bindings) worked, the table's arrows and Enter reached nothing.
    with serving() as served:
        tab.get(served.url)
        text = wait_for_screen(tab, lambda t: " python3" in t, what="the processes")
        rows = [line for line in text.splitlines() if line.rstrip().endswith("python3")]
        second_pid = rows[1].split()[1]
        press(tab, "\ue015")  # Down: the second process
        press(tab, "\ue007")  # Enter: its details
        details = wait_for_screen(
            tab, lambda t: f"PID {second_pid} on GPU" in t, what="the second process's details"
        )
        keep_screenshot(tab, "process-details")
    assert "PID (driver)" in details


def test_signal_keys_do_nothing_at_all(tab: Any) -> None:
    with serving() as served:
        tab.get(served.url)
        wait_for_screen(tab, lambda t: " python3" in t, what="the processes")
        # The process table has the keys at start; k, K and i are its signal keys.
        press(tab, "kKi")
        time.sleep(1.5)
        text = screen_text(tab)
        keep_screenshot(tab, "signal-keys")
    # No dialog offering to send, and not even a toast saying signals are off: the keys
    # are not there.
    assert "Send" not in text
    assert "Signal not sent" not in text
    assert " 0 · NVIDIA" in text


def test_a_viewer_past_the_limit_gets_the_full_page(tab: Any) -> None:
    with serving("--max-viewers", "1") as served:
        tab.get(served.url)
        wait_for_screen(tab, lambda t: " 0 · NVIDIA" in t, what="the first viewer")
        tab.switch_to.new_window("tab")
        tab.get(served.url)
        body = tab.find_element("tag name", "body").text
        keep_screenshot(tab, "full")
        assert "gputop is full" in body
        assert "All 1 viewer slots are in use" in body
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(served.url, timeout=10)
        assert refused.value.code == 503


def test_two_viewers_share_one_sampler(tab: Any, tmp_path: Path) -> None:
    log = tmp_path / "nvml-inits"
    with serving(env={"GPUTOP_FAKE_NVML_INIT_LOG": str(log)}) as served:
        tab.get(served.url)
        wait_for_screen(tab, lambda t: " 3 · NVIDIA" in t, what="the first viewer's GPUs")
        first = tab.current_window_handle
        tab.switch_to.new_window("tab")
        tab.get(served.url)
        wait_for_screen(tab, lambda t: " 3 · NVIDIA" in t, what="the second viewer's GPUs")
        viewers = served.viewer_pids()
        tab.switch_to.window(first)
        clock = screen_text(tab).splitlines()[0]
        # The first viewer goes on updating (its header's clock moves) while both are open.
        wait_for_screen(tab, lambda t: t.splitlines()[0] != clock, what="a later tick")
        inits = log.read_text().split()
    assert len(viewers) == 2
    # NVML was started once, by the server: neither viewer process samples.
    assert inits == [str(served.process.pid)]


DCGM = ROOT / "snapshots" / "dcgm"
EXPOSITIONS = ("titanv-k8s.prom", "h100-mig-pods.prom", "v100x4-r6i3n0.prom")
"""Real dcgm-exporter expositions: 5 TITAN V, 1 H100 with MIG and pods, 4 V100 (9 GPUs
in all, as the fleet counts them: the H100's MIG devices are one GPU)."""


def test_the_fleet_view_over_a_real_prometheus(tab: Any) -> None:
    texts = [(DCGM / name).read_text() for name in EXPOSITIONS]
    with (
        exporters(texts) as servers,
        running_prometheus([server.target for server in servers]) as prometheus,
    ):
        prometheus.wait_for("up == 1", len(servers))
        prometheus.wait_for("count_over_time(up[1m]) > 2", len(servers))
        with serving("cluster", "--prometheus", prometheus.url, "--refresh", "1") as served:
            tab.get(served.url)
            text = wait_for_screen(
                tab,
                lambda t: all(
                    node in t for node in ("dcgm-exporter-lcxpl", "gsrh100-074", "r6i3n0")
                ),
                what="the three nodes",
            )
            keep_screenshot(tab, "fleet")
            assert "3 of 3 nodes" in text and "of 9 GPUs idle" in text
            # The fleet's own keys work in the browser: Enter opens the first node, Esc
            # comes back. No GPU is idle here (the V100s at 0 % send no FB_USED: unknown),
            # so the rows tie on idle GPUs and sort by host: the TITAN V box comes first.
            first = text.splitlines()[3].split()[0]
            press(tab, "\n")
            # Wait for what is read: on a loaded machine the page once showed the node's
            # header before its GPUs.
            wait_for_screen(
                tab,
                lambda t: f"{first}  driver" in t and "Esc Fleet" in t and "TITAN V" in t,
                what="the first node's TITAN Vs",
            )
            keep_screenshot(tab, "fleet-node")
            press(tab, "\ue00c")  # Esc
            wait_for_screen(tab, lambda t: "3 of 3 nodes" in t, what="the fleet again")


def test_the_browser_leaves_no_profile_behind() -> None:
    # Each run of this module used to leave an 11 MB Chromium profile in the temp directory.
    with browser() as driver:
        profile = Path(driver.capabilities["chrome"]["userDataDir"])
        assert profile.is_dir() and profile.name.startswith("gputop-chromium-")
    assert not profile.exists()
