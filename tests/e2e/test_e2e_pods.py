"""The real ``gputop`` TUI in tmux on a fake Kubernetes node (fake NVML, a host procfs and
``/var/log/pods`` from real cgroup paths, the real PodResources service on a unix socket):
the attribution sources reach the screen."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.terminal import TIMEOUT, Terminal
from unit.test_pods_cli import node

__all__ = ["node"]  # the fake node and its kubelet, a fixture of the --json test


@pytest.fixture
def pods_tui(node: tuple[Path, dict[str, str]], tmp_path: Path) -> Iterator[Terminal]:
    _, environ = node
    # Only what the node sets: the rest of this process's environment reaches tmux anyway.
    changed = {k: v for k, v in environ.items() if os.environ.get(k) != v}
    term = Terminal(tmp_path, ["--interval", "0.5"], changed)
    try:
        yield term
    finally:
        term.close()


def test_pods_reach_the_table_the_mig_tree_and_the_container_line(pods_tui: Terminal) -> None:
    term = pods_tui
    screen = term.wait_for("live", "POD", "trainer-0", "infer-0", "Given GPU 0, MIG 1:")
    assert "other containers:" in screen and "pod monitoring/gputop-x7k2p" in screen
    term.press("p")
    screen = term.wait_for("1 process in ml/trainer-", "4 groups")
    assert "▸ 0" in screen
    term.press("m")
    # The panel's MIG rows name the pod too: it is the tree's line that must.
    deadline = time.monotonic() + TIMEOUT
    while not any("CI 0" in line and "infer-0" in line for line in term.screen().splitlines()):
        assert time.monotonic() < deadline, term.screen()
        time.sleep(0.1)
    term.press("q")
    assert term.exit_code() == 0
