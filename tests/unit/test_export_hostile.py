"""`gputop export` against clients that misbehave on purpose (issue 26 §5, §8 and "Smaller").

The server is the exporter's own (``MetricsServer``), on 127.0.0.1, with a short request
deadline so that each test takes a second or two: clients that trickle their request a byte
at a time, more clients than threads, a burst larger than Python's default listen backlog,
plain HTTP on the HTTPS port, user names probed by timing, an expired certificate.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from gputop.web.config import Authenticator, load_web_config
from gputop.web.metrics_server import MetricsServer
from support.command import ROOT, gputop_command
from support.exporter import FOUR
from support.metrics import web_config
from support.net import free_port, http_get

BODY = b"# a metric\nup 1\n"


@contextlib.contextmanager
def serving(**options: object) -> Iterator[MetricsServer]:
    server = MetricsServer(("127.0.0.1", 0), lambda: (BODY, "text/plain"), **options)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def url(server: MetricsServer, scheme: str = "http") -> str:
    return f"{scheme}://127.0.0.1:{server.server_address[1]}/metrics"


def trickler(port: int, stop: threading.Event, every: float = 0.1) -> socket.socket:
    """A client that sends a request's head a byte at a time, on a thread, until cut off."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    head = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 10_000

    def send() -> None:
        for byte in head:
            if stop.wait(every):
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return

    threading.Thread(target=send, daemon=True).start()
    return sock


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([sock], [], [], max(0.0, end - time.monotonic()))
        if ready:
            try:
                if sock.recv(4096) == b"":
                    return True
            except OSError:
                return True
    return False


def request_threads() -> int:
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def test_a_request_trickled_a_byte_at_a_time_is_cut_at_the_deadline() -> None:
    # Each byte comes well within any per-read timeout; the request as a whole does not.
    stop = threading.Event()
    with serving(request_timeout=1.0) as server:
        sock = trickler(server.server_address[1], stop)
        started = time.monotonic()
        try:
            assert closed_within(sock, 3.0)
            assert time.monotonic() - started < 1.8
        finally:
            stop.set()
            sock.close()


def test_connections_in_flight_are_bounded_and_a_scrape_gets_through_after() -> None:
    stop = threading.Event()
    with serving(request_timeout=0.6, max_connections=4) as server:
        port = server.server_address[1]
        socks = [trickler(port, stop) for _ in range(8)]
        try:
            time.sleep(0.3)
            assert request_threads() <= 4  # 8 clients, 4 threads; the rest wait in the backlog
            started = time.monotonic()
            status, body = http_get(url(server), timeout=10)
            # Within the deadlines of the two rounds of tricklers ahead of it, at most.
            assert (status, body) == (200, BODY)
            assert time.monotonic() - started < 2 * 0.6 + 1.0
        finally:
            stop.set()
            for sock in socks:
                sock.close()


def test_a_burst_beyond_pythons_default_backlog_is_held() -> None:
    # Not accepting yet: every connection of the burst must wait in the listen backlog
    # (Python's default of 5 made the 7th connect hang and time out).
    server = MetricsServer(("127.0.0.1", 0), lambda: (BODY, "text/plain"))
    socks: list[socket.socket] = []
    try:
        address = ("127.0.0.1", server.server_address[1])
        for _ in range(300):
            socks.append(socket.create_connection(address, timeout=0.5))
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        try:
            for sock in socks[:20]:
                sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            answers = [sock.makefile("rb").read() for sock in socks[:20]]
        finally:
            server.shutdown()
            thread.join(5)
    finally:
        for sock in socks:
            sock.close()
        server.server_close()
    assert len(socks) == 300
    assert all(answer.startswith(b"HTTP/1.0 200") and answer.endswith(BODY) for answer in answers)


def test_a_stop_while_a_connections_thread_starts_stops_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SIGTERM's handler (or Ctrl-C's) can run while `Thread.start` waits for a thread that is
    # already running, and that thread frees its slot itself. Released a second time, the
    # semaphore raised a ValueError in place of the stop, the server swallowed it, and
    # `gputop export` went on serving after SIGTERM (1 stop in 8 with the CPUs busy).
    start = threading.Thread.start

    def interrupted(thread: threading.Thread) -> None:
        start(thread)
        thread.join(5)  # the connection answered and its slot freed: then the signal comes
        raise KeyboardInterrupt

    server = MetricsServer(("127.0.0.1", 0), lambda: (BODY, "text/plain"), max_connections=2)
    try:
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as sock:
            sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            monkeypatch.setattr(threading.Thread, "start", interrupted)
            with pytest.raises(KeyboardInterrupt):
                server.handle_request()
            monkeypatch.undo()
            assert sock.makefile("rb").read().endswith(BODY)
        # Both slots free, and no third: the connection's slot went back once.
        slots = [server._slots.acquire(blocking=False) for _ in range(3)]
        assert slots == [True, True, False]
    finally:
        server.server_close()


def test_plain_http_on_the_https_port_is_told_so(tmp_path: Path) -> None:
    config = load_web_config(web_config(tmp_path))
    with serving(tls=config.tls, request_timeout=2.0) as server:
        status, body = http_get(url(server), timeout=3)
        assert (status, body) == (400, b"Client sent an HTTP request to an HTTPS server.\n")
        # HTTPS itself still works, and junk that is neither is closed.
        context = ssl.create_default_context(cafile=str(tmp_path / "server.crt"))
        assert http_get(url(server, "https"), context=context, timeout=3)[0] == 200
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=3) as sock:
            sock.sendall(b"\x00\x01junk")
            assert closed_within(sock, 2.5)


def test_an_unknown_user_takes_as_long_as_a_wrong_password() -> None:
    # Cost 6: about a millisecond a check, a thousand times a dictionary lookup.
    hashed = bcrypt.hashpw(b"right", bcrypt.gensalt(rounds=6)).replace(b"$2b$", b"$2y$")
    auth = Authenticator({"alice": hashed})

    def took(user: str, attempt: int) -> float:
        # The thread's CPU time: the work each check does, which is what an attacker's
        # clock would tell apart. Wall time also counts the time the thread waits for a
        # core, which on a busy machine swamps a millisecond (a CI run's quickest of nine
        # read 14 ms for a wrong password against 6 ms for an unknown user).
        started = time.thread_time()
        assert not auth.check(user, f"wrong-{attempt}")
        return time.thread_time() - started

    # Taken in turns, and the quickest of each.
    times: dict[str, list[float]] = {"alice": [], "mallory": []}
    for attempt in range(9):
        for user, taken in times.items():
            taken.append(took(user, attempt))
    known, unknown = min(times["alice"]), min(times["mallory"])
    assert unknown > 0.5 * known, (known, unknown)
    assert auth.check("alice", "right") and not auth.check("mallory", "right")


def test_an_unknown_users_dummy_hash_has_the_users_cost() -> None:
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def spy(password: bytes, hashed: bytes) -> bool:
        calls.append(hashed)
        return real(password, hashed)

    hashed = bcrypt.hashpw(b"right", bcrypt.gensalt(rounds=5))
    auth = Authenticator({"alice": hashed})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bcrypt, "checkpw", spy)
        assert not auth.check("mallory", "right")
    (dummy,) = calls
    assert dummy != hashed and dummy.split(b"$")[2] == b"05"


def test_an_expired_certificate_is_warned_of_in_one_line_at_start(tmp_path: Path) -> None:
    config = web_config(tmp_path, expired=True)
    assert load_web_config(config).warnings == (
        f"warning: --web-config-file {config}: the TLS certificate {tmp_path / 'server.crt'} "
        "has expired: clients that check it (Prometheus does) will refuse every scrape",
    )
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert load_web_config(web_config(fresh)).warnings == ()
    command, environ = gputop_command(str(FOUR))
    port = free_port()
    args = [*command, "export", "--web-config-file", str(config), "--listen", f"127.0.0.1:{port}"]
    process = subprocess.Popen(
        args, cwd=ROOT, env=environ, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        second = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(10)
    assert first.startswith(f"gputop: warning: --web-config-file {config}: the TLS certificate")
    assert first.rstrip().endswith("will refuse every scrape")
    assert second.startswith("gputop: serving https://127.0.0.1:")
