"""Helpers of the browser tests of `gputop serve`: the real server, Debian's Chromium.

The page's terminal is xterm.js drawing on a canvas, so the tests read what it holds through
its buffer API (``window.textualSession.terminal``, which gputop's page exposes) instead of
the DOM. Screenshots go to ``.artifacts/serve/`` at the repository root (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from support.command import ROOT, gputop_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = ROOT / ".artifacts" / "serve"

BUFFER_JS = """
const session = window.textualSession;
if (!session) { return null; }
const terminal = session.terminal;
const buffer = terminal.buffer.active;
const rows = [];
for (let i = 0; i < terminal.rows; i++) {
    const line = buffer.getLine(buffer.viewportY + i);
    rows.push(line ? line.translateToString(true) : "");
}
return rows.join("\\n");
"""
"""The terminal's visible rows as text."""


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def browser() -> Iterator[Any]:
    """Headless Chromium under chromedriver, with a fresh profile and no network of its own;
    quit afterwards and its profile (about 11 MB) removed, whatever happens."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="gputop-chromium-")
    for argument in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1400,1000",
    ):
        options.add_argument(argument)
    try:
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        try:
            yield driver
        finally:
            driver.quit()
    finally:
        # A helper process of Chromium's may still be writing there for a moment.
        deadline = time.monotonic() + 5
        while True:
            shutil.rmtree(profile, ignore_errors=True)
            if not os.path.exists(profile) or time.monotonic() > deadline:
                break
            time.sleep(0.1)


class Served:
    """A running `gputop serve` (its process group: the server and every viewer)."""

    def __init__(
        self, process: subprocess.Popen[bytes], port: int, log: Path, *, https: bool = False
    ) -> None:
        self.process = process
        self.port = port
        self.url = f"{'https' if https else 'http'}://127.0.0.1:{port}/"
        self.log = log

    def viewer_pids(self) -> list[int]:
        """PIDs of the viewer apps now running under the server."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            group = int(fields[2])
            if group == self.process.pid and b"gputop.cli.serve_viewer" in command:
                found.append(int(entry.name))
        return found


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None, https: bool = False) -> Iterator[Served]:
    """`gputop serve --listen 127.0.0.1:PORT ARGS` on the fake NVML; stopped afterwards,
    with its viewers, whatever happens."""
    port = free_port()
    command, environ = gputop_command()
    environ.update(env or {})
    log = Path(tempfile.mkstemp(prefix="gputop-serve-", suffix=".log")[1])
    with log.open("wb") as out:
        process = subprocess.Popen(
            # `serve cluster` must come first: the web options go after.
            [*command, "serve", *args, "--listen", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=environ,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"gputop serve ended: {log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"gputop serve did not listen: {log.read_text()}"
                    ) from None
                time.sleep(0.1)
        yield Served(process, port, log, https=https)
    finally:
        _stop_group(process)
        log.unlink(missing_ok=True)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with suppress(subprocess.TimeoutExpired):
        process.wait(10)
    # Viewers left behind by a server that did not stop them are this test's to end.
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def screen_text(driver: Any) -> str:
    """What the page's terminal shows now ("" before the page has a terminal)."""
    return str(driver.execute_script(BUFFER_JS) or "")


def wait_for_screen(
    driver: Any, check: Callable[[str], bool], *, timeout: float = 20.0, what: str = ""
) -> str:
    """The terminal's text once ``check`` holds for it; fails with the last text seen."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen_text(driver)
        if text and check(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"the page never showed {what or 'what was expected'}:\n{text}")


def press(driver: Any, keys: str) -> None:
    """Type ``keys`` into the page's terminal."""
    from selenium.webdriver.common.action_chains import ActionChains

    driver.execute_script("window.textualSession.terminal.focus()")
    ActionChains(driver).send_keys(keys).perform()


def keep_screenshot(driver: Any, name: str) -> Path:
    """Save the page as ``.artifacts/serve/NAME.png`` and say where."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")
    return path
