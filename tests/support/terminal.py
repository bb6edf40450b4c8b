"""One `gputop` process in a real terminal: a detached tmux session on its own server socket,
so nothing leaks into a user's tmux, read with ``capture-pane``. The end-to-end tests of the
box view, the pods and the fleet all drive gputop through this."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 15.0


class Terminal:
    """``python -m gputop ARGS`` in a detached tmux session of ``size`` (columns, rows)."""

    def __init__(
        self,
        tmp: Path,
        args: list[str],
        env: dict[str, str] | None = None,
        *,
        size: tuple[int, int] = (120, 40),
        stdin_from: list[str] | None = None,
        redirect: str = "",
        timeout: float = TIMEOUT,
        poll: float = 0.1,
        key_pause: float = 0.15,
    ) -> None:
        """``stdin_from`` is a command whose output is piped in, ``redirect`` shell
        redirections after gputop (``> out.txt``); ``timeout`` bounds every wait."""
        self.socket = f"gputop-e2e-{uuid.uuid4().hex[:8]}"
        self.rc_file = tmp / f"{self.socket}.rc"
        self.timeout = timeout
        self._poll = poll
        self._key_pause = key_pause
        environment = {"TERM": "xterm-256color", "COLORTERM": "truecolor", **(env or {})}
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in environment.items())
        command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "gputop", *args])
        if stdin_from is not None:
            command = " ".join(shlex.quote(a) for a in stdin_from) + " | " + command
        # COLUMNS/LINES may be set in this process (curses puts them there); they would
        # override the pane's real size.
        script = (
            f"cd {shlex.quote(str(REPO))} && unset COLUMNS LINES && export {exports} && "
            f"{command} {redirect}; echo $? > {self.rc_file}"
        )
        columns, rows = size
        self.tmux("new-session", "-d", "-s", "t", "-x", str(columns), "-y", str(rows), script)

    def tmux(self, *args: str) -> str:
        """A tmux command on this terminal's own server; its standard output."""
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def screen_with_escapes(self) -> str:
        return self.tmux("capture-pane", "-p", "-e", "-t", "t")

    def wait_for(self, *texts: str) -> str:
        """The screen once every text is on it; fails with the screen when time is up or
        gputop has exited."""
        return self.wait_until(lambda screen: all(text in screen for text in texts), texts)

    def wait_until(self, shown: Callable[[str], bool], what: object) -> str:
        deadline = time.monotonic() + self.timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if shown(screen):
                return screen
            if self.rc_file.exists():
                break
            time.sleep(self._poll)
        raise AssertionError(f"never showed {what!r}; screen was:\n{screen}")

    def press(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "t", key)
            time.sleep(self._key_pause)

    def exit_code(self) -> int:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.rc_file.exists() and self.rc_file.read_text().strip():
                return int(self.rc_file.read_text())
            time.sleep(0.1)
        raise AssertionError(f"gputop did not exit; screen was:\n{self.screen()}")

    def pane_pid(self) -> int:
        """The pid of the shell in the pane (gputop is its child)."""
        return int(self.tmux("list-panes", "-t", "t", "-F", "#{pane_pid}"))

    def close(self) -> None:
        self.tmux("kill-server")
