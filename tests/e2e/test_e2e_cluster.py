"""The real `gputop cluster --prometheus URL` in a real terminal (tmux), over a real Prometheus
scraping real dcgm-exporter expositions (``snapshots/dcgm/``) or a real ``gputop export``:
the fleet shows every node, Enter opens a node with its GPU panels, MIG devices and pods (or
processes), Esc comes back, q exits 0; a killed exporter and a stopped Prometheus are said.

The servers, Prometheus and tmux are started on 127.0.0.1 by the test and stopped by it,
also when it fails.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.exporter import FOUR, running_exporter
from support.prometheus import ExpositionServer, RunningPrometheus, running_prometheus, serving
from support.terminal import Terminal as TmuxTerminal

REPO = Path(__file__).resolve().parents[2]
DCGM = REPO / "snapshots" / "dcgm"
EXPOSITIONS = ("titanv-k8s.prom", "h100-mig-pods.prom", "v100x4-r6i3n0.prom")
TIMEOUT = 30.0

if shutil.which("tmux") is None:  # pragma: no cover - CI installs tmux (.ci/run)
    pytest.fail("tmux is required for the end-to-end tests", pytrace=False)


class Terminal(TmuxTerminal):
    """`gputop cluster` in a detached 140x40 tmux session: Prometheus answers slower than the
    fake NVML, so the waits are longer."""

    def __init__(self, tmp: Path, args: list[str]) -> None:
        super().__init__(tmp, args, size=(140, 40), timeout=TIMEOUT, poll=0.2, key_pause=0.2)


@pytest.fixture
def fleet() -> Iterator[tuple[RunningPrometheus, list[ExpositionServer]]]:
    """A Prometheus scraping three real dcgm-exporter expositions, each its own target."""
    texts = [(DCGM / name).read_text() for name in EXPOSITIONS]
    with serving(texts) as servers, running_prometheus([s.target for s in servers]) as server:
        server.wait_for("up == 1", len(servers))
        server.wait_for("count_over_time(up[1m]) > 2", len(servers))
        yield server, servers


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def test_the_fleet_then_a_node_with_mig_and_pods_then_back(
    fleet: tuple[RunningPrometheus, list[ExpositionServer]],
    terminals: list[Terminal],
    tmp_path: Path,
) -> None:
    prometheus, _ = fleet
    term = Terminal(tmp_path, ["cluster", "--prometheus", prometheus.url, "--refresh", "1"])
    terminals.append(term)
    # 5 TITAN V + 1 H100 + 3 V100: every node and every GPU of the three expositions.
    screen = term.wait_for("dcgm-exporter-lcxpl", "gsrh100-074", "r6i3n0", "of 9 GPUs idle")
    assert "3 of 3 nodes" in screen and "scrape 1 s" in screen
    assert "stale" not in screen
    term.press("/", *"gsrh", "Enter")
    term.wait_for("1 of 3 nodes")
    term.press("Enter")
    # Waited for whole: tmux may catch a frame half painted.
    node = term.wait_for(
        "gsrh100-074  driver 535.129.03", "H100 80GB HBM3", "text-embedding-predictor", "Esc Fleet"
    )
    assert "1g.10gb" in node  # its MIG instances, in the panel
    assert "model-playground-stg" in node  # the pods' namespace
    term.press("Escape")
    term.wait_for("1 of 3 nodes", "of 9 GPUs idle")
    term.press("q")
    assert term.exit_code() == 0


def row_of(screen: str, host: str) -> str:
    return next((line for line in screen.splitlines() if line.lstrip().startswith(host)), "")


def test_a_killed_exporter_turns_stale_and_prometheus_down_is_said_then_recovers(
    fleet: tuple[RunningPrometheus, list[ExpositionServer]],
    terminals: list[Terminal],
    tmp_path: Path,
) -> None:
    prometheus, servers = fleet
    term = Terminal(tmp_path, ["cluster", "--prometheus", prometheus.url, "--refresh", "1"])
    terminals.append(term)
    term.wait_for("dcgm-exporter-lcxpl", "gsrh100-074", "r6i3n0")
    servers[0].stop()  # the TITAN V box's exporter
    deadline = time.monotonic() + TIMEOUT
    while "stale" not in row_of(term.screen(), "dcgm-exporter-lcxpl"):
        assert time.monotonic() < deadline, term.screen()
        time.sleep(0.3)
    screen = term.screen()
    assert "1 node stale" in screen
    # Kept with its last values: five GPUs, not dropped, not zero.
    assert row_of(screen, "dcgm-exporter-lcxpl").split()[1] == "5"
    assert "stale" not in row_of(screen, "r6i3n0")
    # Its node screen says so and draws its GPUs stale.
    term.press("/", *"lcxpl", "Enter", "Enter")
    # Five GPUs (one line each at this size), each with its stale line.
    node = term.wait_until(
        lambda screen: screen.count("stale: no new values for this GPU") == 5, "5 stale GPUs"
    )
    assert "dcgm-exporter-lcxpl  driver" in node and "⚠ stale: newest sample" in node
    assert node.count("TITAN V") == 5
    term.press("Escape", "Escape")
    term.wait_for("3 of 3 nodes")
    prometheus.stop()
    down = term.wait_for(f"⚠ cannot reach Prometheus at {prometheus.url}")
    assert "3 of 3 nodes" in down and "showing the answer of" in down  # the last good rows
    prometheus.start()
    deadline = time.monotonic() + TIMEOUT
    while "cannot reach Prometheus" in term.screen():
        assert time.monotonic() < deadline, term.screen()
        time.sleep(0.3)
    term.wait_for("gsrh100-074", "r6i3n0", "3 of 3 nodes")
    term.press("q")
    assert term.exit_code() == 0


def test_a_gputop_export_node_shows_its_gpus_and_processes(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    # A real `gputop export` replaying four RTX 3090 with eight processes, as node-a.
    with (
        running_exporter("--replay", str(FOUR), "--hostname", "node-a") as exporter,
        running_prometheus([f"127.0.0.1:{exporter.port}"]) as prometheus,
    ):
        prometheus.wait_for("up == 1", 1)
        prometheus.wait_for("count_over_time(up[1m]) > 2", 1)
        term = Terminal(tmp_path, ["cluster", "--prometheus", prometheus.url, "--refresh", "1"])
        terminals.append(term)
        fleet = term.wait_for("node-a", "of 4 GPUs idle", "1 of 1 nodes")
        # The header names node-a as soon as its verdict is in; under load tmux can show
        # that frame's header before its table row: wait for the row, then judge it.
        deadline = time.monotonic() + TIMEOUT
        while "gputop" not in row_of(fleet, "node-a") and time.monotonic() < deadline:
            time.sleep(0.2)
            fleet = term.screen()
        assert "gputop" in row_of(fleet, "node-a"), fleet
        term.press("Enter")
        panels = [f" {index} · NVIDIA GeForce RTX 3090" for index in range(4)]
        node = term.wait_for("node-a  driver 550.90.07", "8 of 8 processes", *panels)
        assert node.count("NVIDIA GeForce RTX 3090") == 4
        term.press("Escape", "q")
        assert term.exit_code() == 0


def test_targets_scraped_directly_show_in_the_same_screens(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    texts = [(DCGM / name).read_text() for name in ("h100-mig-pods.prom", "titanv-k8s.prom")]
    with serving(texts) as servers:
        targets = ",".join(server.target for server in servers)
        term = Terminal(tmp_path, ["cluster", "--targets", targets, "--refresh", "1"])
        terminals.append(term)
        term.wait_for("gsrh100-074", "dcgm-exporter-lcxpl", "2 of 2 nodes", "of 6 GPUs idle")
        term.press("/", *"gsrh", "Enter", "Enter")
        # The same node screen: its panel, MIG rows and the pods its labels name.
        node = term.wait_for(
            "gsrh100-074  driver 535.129.03",
            "H100 80GB HBM3",
            "tts-predictor-00011-deployment-5554f75554-8j8pl",
        )
        assert "1g.10gb" in node
        term.press("Escape", "q")
        assert term.exit_code() == 0
