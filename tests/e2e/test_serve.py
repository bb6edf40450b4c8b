"""`gputop serve` without a browser: its command line, the one-sampler wire, the read-only
view's help, --hide-commands, basic auth, TLS and the page's own files (nothing fetched from
outside)."""

from __future__ import annotations

import base64
import re
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from gputop.cli import main as cli
from gputop.cli.main import parse_options
from gputop.cli.serve import parse_serve, viewer_command
from gputop.errors import BadArguments
from gputop.model import Snapshot
from gputop.model.sample import GpuSample, MigDeviceSample, ProcessSample
from gputop.pipeline.commands import TogglePause
from gputop.pipeline.core import Pipeline
from gputop.pipeline.redact import without_commands
from gputop.pipeline.shared_feed import SharedFeed
from gputop.sources.serve_socket import SnapshotSubscriber
from gputop.ui.screens.help import help_sections
from gputop.web.app_server import load_auth
from gputop.web.options import DEFAULT_VIEWERS
from gputop.web.serve_compat import patched_script
from gputop.web.snapshot_publisher import SnapshotPublisher, private_socket_dir
from support.browser import serving
from support.command import ROOT, gputop_command, start_gputop
from support.net import free_port

FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"


# -- the command line ------------------------------------------------------------------


def test_safe_defaults() -> None:
    request = parse_serve([], parse_options)
    assert (request.web.host, request.web.port) == ("127.0.0.1", 8000)
    assert request.web.max_viewers == DEFAULT_VIEWERS == 8
    assert request.web.auth_file is None and request.web.tls_cert is None
    assert not request.cluster and request.app_args == ()


def test_listen_and_app_options() -> None:
    request = parse_serve(
        ["--listen", "0.0.0.0:9001", "--gpu", "0,1", "--theme", "light"], parse_options
    )
    assert (request.web.host, request.web.port) == ("0.0.0.0", 9001)
    assert request.app_args == ("--gpu", "0,1", "--theme", "light")
    assert parse_serve(["--listen", "[::1]:8080"], parse_options).web.host == "::1"
    assert parse_serve(["--listen", "8081"], parse_options).web.port == 8081


def test_serve_cluster_passes_its_arguments_to_gputop_cluster() -> None:
    request = parse_serve(
        ["cluster", "--listen", "127.0.0.1:8100", "--prometheus", "http://prom:9090", "-x"]
    )
    assert request.cluster
    assert request.web.port == 8100
    assert request.app_args == ("--prometheus", "http://prom:9090", "-x")
    command = viewer_command(None, request)
    assert command.startswith("exec ")
    assert command.endswith("-m gputop cluster --prometheus http://prom:9090 -x")


def test_viewer_command_quotes_what_it_passes(tmp_path: Path) -> None:
    request = parse_serve(["--hide-commands", "--replay", "my capture.xml"], parse_options)
    command = viewer_command(tmp_path / "a b.sock", request)
    assert "-m gputop.cli.serve_viewer" in command
    assert f"--socket '{tmp_path / 'a b.sock'}'" in command
    assert "--hide-commands -- --replay 'my capture.xml'" in command


def test_readonly_is_accepted_since_a_served_view_is_read_only_anyway(tmp_path: Path) -> None:
    request = parse_serve(["--readonly", "--gpu", "0"], parse_options)
    assert request.app_args == ("--readonly", "--gpu", "0")
    assert "-- --readonly --gpu 0" in viewer_command(tmp_path / "s.sock", request)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--listen", "localhost:http"], "--listen"),
        (["--listen", "127.0.0.1:70000"], "65535"),
        (["--tls-cert", "c.pem"], "--tls-key"),
        (["--max-viewers", "0"], "--max-viewers"),
        (["--once"], "--once"),
        (["--record", "x.xml"], "--record"),
        (["--auth-file", "/nonexistent/users"], "--auth-file"),
        (["--replay", "/nonexistent/run.xml"], "nonexistent"),
        (["--replay", "-"], "needs a file"),
        (["--gpu", "zz"], "--gpu"),
    ],
)
def test_bad_serve_options_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    code = cli.main(["serve", *argv])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gputop: "), captured.err
    assert words in lines[0]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["cluster"], "--prometheus"),
        (["cluster", "--prometheus", "http://127.0.0.1:9", "--once"], "--once"),
        (["cluster", "--prometheus", "http://127.0.0.1:9", "--refresh", "0"], "--refresh"),
    ],
)
def test_bad_cluster_options_are_refused_before_serving(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    code = cli.main(["serve", *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert words in err


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*_gputop(), "serve", "--listen", f"127.0.0.1:{port}", "--demo"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    assert result.returncode == 2, result.stderr
    # One line, and no "serving at" line before: it never served.
    assert result.stderr.splitlines() == [
        f"gputop: --listen 127.0.0.1:{port}: cannot listen there: "
        "the address is already in use (another server on that port?)"
    ], result.stderr


def _gputop() -> list[str]:
    return gputop_command()[0]


def test_auth_file_lines(tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("# who may look\nalice:s3cret\n\nbob:pa:ss\n")
    assert load_auth(users) == {"alice": "s3cret", "bob": "pa:ss"}
    users.write_text("alice\n")
    with pytest.raises(BadArguments, match="line 1 is not user:password"):
        load_auth(users)
    users.write_text("# nobody\n")
    with pytest.raises(BadArguments, match="no user:password"):
        load_auth(users)


# -- the one sampler -----------------------------------------------------------------------


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A private directory for a publisher's socket, removed afterwards."""
    directory = private_socket_dir()
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _snapshot(n: int) -> Snapshot:
    """The n-th sample of one box (told apart by its time)."""
    return Snapshot(
        timestamp=datetime(2026, 1, 1, 0, 0, n), host="box", gpus=(GpuSample(index=0, name="G"),)
    )


def _seconds(snapshots: Iterable[Snapshot]) -> list[int]:
    return [s.timestamp.second if s.timestamp else -1 for s in snapshots]


def test_a_viewer_gets_the_recent_past_then_each_new_snapshot(socket_dir: Path) -> None:
    directory = socket_dir
    assert directory.stat().st_mode & 0o077 == 0  # only this user may reach the socket
    publisher = SnapshotPublisher(directory / "s.sock", interval=0.5, backlog=3)
    try:
        for n in range(5):
            publisher.publish(_snapshot(n))
        subscriber = SnapshotSubscriber(publisher.path)
        assert subscriber.interval == 0.5
        # The last three (the backlog), oldest first.
        assert _seconds(subscriber.take()) == [2, 3, 4]
        publisher.publish(_snapshot(5))
        assert _seconds(subscriber.take(wait=5)) == [5]
        publisher.fail("NVMLError: GPU is lost")
        deadline = time.monotonic() + 5
        while subscriber.error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert subscriber.error == "NVMLError: GPU is lost"
        publisher.publish(_snapshot(6))
        assert _seconds(subscriber.take(wait=5)) == [6]
        assert subscriber.error is None
    finally:
        publisher.close()
    deadline = time.monotonic() + 5
    while subscriber.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert subscriber.error is not None and "stopped" in subscriber.error
    subscriber.close()


def test_no_server_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BadArguments, match="no gputop server"):
        SnapshotSubscriber(tmp_path / "nothing.sock", timeout=1)


def test_the_shared_feed_is_a_live_view_that_pauses_per_viewer(socket_dir: Path) -> None:
    directory = socket_dir
    publisher = SnapshotPublisher(directory / "s.sock", interval=1.0)
    try:
        publisher.publish(_snapshot(0))
        publisher.publish(_snapshot(1))
        feed = SharedFeed(SnapshotSubscriber(publisher.path))
        pipeline = Pipeline(feed)
        first = pipeline.start()
        assert first.live and first.replay is None
        assert first.snapshot.timestamp == _snapshot(1).timestamp
        assert _seconds(first.window) == [0, 1]
        pipeline.apply(TogglePause())
        assert pipeline.tick().paused and pipeline.next_delay() is None
        publisher.publish(_snapshot(2))
        publisher.publish(_snapshot(3))
        # Resumed, what the server sampled meanwhile is filed in order.
        pipeline.apply(TogglePause())
        tick = pipeline.tick()
        assert not tick.paused
        # The two may reach this viewer's socket one step apart on a busy machine.
        deadline = time.monotonic() + 5
        while _seconds(tick.window)[-1] != 3 and time.monotonic() < deadline:
            tick = pipeline.advance()
        assert _seconds(tick.window)[-3:] == [1, 2, 3]
        pipeline.close()
    finally:
        publisher.close()


# -- what a viewer shows -----------------------------------------------------------------------


def test_the_served_help_has_no_signal_and_no_interval_keys() -> None:
    def keys(served: bool) -> set[str]:
        sections = help_sections([], served=served)
        return {f"{title}: {row[1]}" for title, rows in sections for row in rows}

    assert {"Processes: TERM", "Processes: KILL", "Processes: INT"} <= keys(False)
    assert "Live: Poll faster" in keys(False)
    served = keys(True)
    assert not any(word in key for key in served for word in ("TERM", "KILL", "INT", "Poll"))
    assert "Processes: Filter" in served


def test_hide_commands_keeps_the_executable_name_only() -> None:
    secret = ProcessSample(
        pid=7, name="/opt/venv/bin/python3", command="python3 train.py --token=abc", user="ann"
    )
    snapshot = Snapshot(
        timestamp=None,
        gpus=(
            GpuSample(
                index=0,
                processes=(secret,),
                mig_devices=(
                    MigDeviceSample(
                        index=0, gpu_instance_id=1, compute_instance_id=0, processes=(secret,)
                    ),
                ),
            ),
        ),
    )
    hidden = without_commands(snapshot)
    for process in (hidden.gpus[0].processes[0], hidden.gpus[0].mig_devices[0].processes[0]):
        assert process.command is None
        assert process.name == "python3"
        assert (process.pid, process.user) == (7, "ann")
    assert "abc" not in repr(hidden)


def test_the_sampler_drops_command_lines_before_any_viewer_gets_them(socket_dir: Path) -> None:
    from gputop.pipeline.serve_sampler import Sampler

    process = ProcessSample(pid=7, name="python3", command="python3 train.py --token=abc")
    taken = Snapshot(timestamp=None, gpus=(GpuSample(index=0, processes=(process,)),))

    class Box:
        def poll(self) -> Snapshot:
            return taken

        def close(self) -> None:
            pass

    for hide in (True, False):
        directory = socket_dir
        publisher = SnapshotPublisher(directory / "s.sock", interval=0.25)
        try:
            sampler = Sampler(Box(), publisher, interval=0.25, hide=hide)
            sampler.publish(taken)
            subscriber = SnapshotSubscriber(publisher.path)
            sampler.start()
            received = subscriber.take(wait=5) + subscriber.take(wait=5)
            sampler.stop()
            subscriber.close()
        finally:
            publisher.close()
        commands = {p.command for s in received for g in s.gpus for p in g.processes}
        assert len(received) >= 2  # the first (the backlog) and one the sampler took
        assert commands == ({None} if hide else {process.command})


# -- the page, auth and TLS ---------------------------------------------------------------------


def _get(url: str, *, auth: str | None = None, context: ssl.SSLContext | None = None) -> str:
    request = urllib.request.Request(url)
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return str(response.read().decode("utf-8"))


def test_the_page_fetches_nothing_from_outside_and_exposes_its_terminal() -> None:
    with serving("--demo") as served:
        page = _get(served.url)
        css = _get(served.url + "static/css/xterm.css")
        script = _get(served.url + "static/js/textual.js")
        font = urllib.request.urlopen(
            served.url + "static/fonts/RobotoMono-VariableFont_wght.ttf", timeout=10
        ).read()
    # Every link of the page and its stylesheet is relative: nothing from another host
    # (textual-serve's own page loads Google Fonts).
    for text in (page, css):
        assert re.findall(r"""(?:href|src)=["']?(?:https?:)?//""", text) == []
        assert "url(http" not in text and "url(//" not in text
    assert "fonts.googleapis" not in page
    assert '"Roboto Mono"' in page and len(font) > 100_000
    assert "window.textualSession=t;" in script


def test_a_changed_textual_serve_script_is_caught() -> None:
    with pytest.raises(RuntimeError, match="changed"):
        patched_script("console.log('another script')")


def test_basic_auth_guards_the_page_the_script_and_the_socket(tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("alice:s3cret\n")
    with serving("--auth-file", str(users), "--demo") as served:
        for path in ("", "static/js/textual.js", "ws"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                _get(served.url + path)
            assert refused.value.code == 401
            assert "Basic" in refused.value.headers["WWW-Authenticate"]
        with pytest.raises(urllib.error.HTTPError):
            _get(served.url, auth="alice:wrong")
        with pytest.raises(urllib.error.HTTPError):
            _get(served.url, auth="mallory:s3cret")
        assert "<title>gputop</title>" in _get(served.url, auth="alice:s3cret")


def test_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False
    with serving("--tls-cert", str(cert), "--tls-key", str(key), "--demo", https=True) as served:
        assert served.url.startswith("https://")
        assert "<title>gputop</title>" in _get(served.url, context=context)
        # Plain HTTP to the TLS port is not answered.
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            _get(served.url.replace("https://", "http://"))


def test_bad_tls_files_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("not a certificate\n")
    code = cli.main(["serve", "--tls-cert", str(cert), "--tls-key", str(cert)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "--tls-cert" in err


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGTERM (``SigCgt`` in /proc)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def test_sigterm_while_the_driver_starts_exits_0_as_export_does() -> None:
    """Issue 25: `gputop serve` exited 143 on SIGTERM where `export` exits 0. NVML can take
    seconds to start; a service manager's stop then must still be a clean one."""
    server = start_gputop(
        "serve",
        "--listen",
        f"127.0.0.1:{free_port()}",
        GPUTOP_FAKE_NVML_LATENCY="0, nvmlInitWithFlags=30",
    )
    try:
        deadline = time.monotonic() + 30
        while not _catches_sigterm(server.pid):
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "serve never took SIGTERM over"
            time.sleep(0.05)
        server.send_signal(signal.SIGTERM)
        code = server.wait(15)
        err = server.stderr.read() if server.stderr else ""
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(5)
    assert code == 0, err
    assert "Traceback" not in err
