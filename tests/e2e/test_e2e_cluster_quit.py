"""The real `gputop cluster` in a real terminal quits on q while its server hangs (issue 26 §6).

The server on 127.0.0.1 sends its answers a byte at a time; ``--timeout 60`` lets a request
wait a minute. q ends the process at once all the same: the requests in flight are aborted,
not waited for.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from support.hostile import Connection, hostile
from support.terminal import Terminal

if shutil.which("tmux") is None:  # pragma: no cover - CI installs tmux (.ci/run)
    pytest.fail("tmux is required for the end-to-end tests", pytrace=False)


def one_byte_at_a_time(conn: Connection) -> None:
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n")
    conn.trickle(b"{}", 0.2)


@pytest.mark.parametrize("where", ["--prometheus", "--targets"])
def test_q_ends_the_fleet_view_while_the_server_trickles(tmp_path: Path, where: str) -> None:
    with hostile(one_byte_at_a_time) as server:
        address = server.url if where == "--prometheus" else f"127.0.0.1:{server.port}"
        args = ["cluster", where, address, "--timeout", "60", "--refresh", "1"]
        term = Terminal(tmp_path, args, size=(120, 30), timeout=20, key_pause=0)
        try:
            term.wait_for("q Quit")
            deadline = time.monotonic() + 10
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert server.requests  # a refresh is waiting on the server
            started = time.monotonic()
            term.press("q")
            while not (term.rc_file.exists() and term.rc_file.read_text().strip()):
                assert time.monotonic() - started < 5, term.screen()
                time.sleep(0.02)
            took = time.monotonic() - started
        finally:
            term.close()
    assert term.rc_file.read_text().strip() == "0"
    # The app itself ends within 0.5 s (tests/ui/test_fleet_quit.py); here the process's own
    # teardown (about 0.3-0.5 s on a loaded CI machine) comes on top, not the network's minute.
    assert took < 1.5
