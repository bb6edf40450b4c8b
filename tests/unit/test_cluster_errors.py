"""`gputop cluster`: every way of not getting an answer is one line on stderr, never a trace.

Bad options exit 2; a server that cannot be used (refused, 401/403, slow, not Prometheus)
exits 1. Credentials are sent as asked: a real Prometheus behind a small auth proxy answers
only with them.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from support.prometheus import DCGM, cluster, free_port, running_prometheus, serving

TOKEN = "s3cret-token"
BASIC = ("grafana", "pa:ss")


@contextlib.contextmanager
def http_server(
    answer: tuple[int, str, bytes], delay: float = 0.0, upstream: str | None = None
) -> Iterator[str]:
    """A server on 127.0.0.1 answering ``(status, content type, body)``; with ``upstream``
    an auth proxy in front of it that needs the bearer TOKEN or basic BASIC."""

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if delay:
                time.sleep(delay)
            status, kind, payload = answer
            if upstream is not None:
                given = self.headers.get("Authorization", "")
                basic = base64.b64encode(":".join(BASIC).encode()).decode()
                if given not in (f"Bearer {TOKEN}", f"Basic {basic}"):
                    status, kind, payload = 401, "text/plain", b"Unauthorized\n"
                else:
                    request = urllib.request.Request(
                        upstream + self.path, data=body, method=self.command
                    )
                    if body is not None:
                        request.add_header("Content-Type", "application/x-www-form-urlencoded")
                    with urllib.request.urlopen(request, timeout=10) as response:
                        status, kind = response.status, response.headers["Content-Type"]
                        payload = response.read()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(payload)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _one_line(result_stderr: str) -> str:
    lines = result_stderr.splitlines()
    assert len(lines) == 1, result_stderr
    assert "Traceback" not in result_stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--prometheus", "localhost:9090"], "is not a URL"),
        (["--prometheus", "ftp://host/"], "is not a URL"),
        (["--prometheus", "http://host:port/"], "port that is not a number"),
        ([], "one of the arguments --prometheus --targets is required"),
        (["--prometheus", "http://h", "--window", "0"], "--window"),
        (["--prometheus", "http://h", "--timeout", "nan"], "--timeout"),
        (["--prometheus", "http://h", "--bearer-token-file", "/nonexistent"], "No such file"),
        (["--prometheus", "http://h", "--bearer-token-env", "GPUTOP_NO_SUCH_VAR"], "not set"),
        (["--prometheus", "http://h", "--basic-auth-user", "u"], "needs --basic-auth-password"),
        (["--prometheus", "http://h", "--header", "no colon"], "give 'NAME: VALUE'"),
        (["--prometheus", "http://h", "--ca-file", "/nonexistent.pem"], "--ca-file"),
    ],
)
def test_bad_options_say_one_line_and_exit_2(args: list[str], expected: str) -> None:
    result = cluster(*args, "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert expected in _one_line(result.stderr)


def test_connection_refused() -> None:
    port = free_port()
    result = cluster("--prometheus", f"http://127.0.0.1:{port}", "--json")
    assert result.returncode == 1
    assert _one_line(result.stderr) == (
        f"gputop: cannot reach Prometheus at http://127.0.0.1:{port}: connection refused"
    )


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            (200, "text/html", b"<!doctype html><title>Grafana</title>"),
            "is not a Prometheus server: /api/v1 answered text/html, not JSON",
        ),
        (
            (200, "application/json", b'{"hello": "world"}'),
            "is not a Prometheus server: its JSON is not the /api/v1 format",
        ),
        ((200, "application/json", b"{garbage"), "is not a Prometheus server"),
        ((404, "text/plain", b"404 page not found"), "answered HTTP 404 not found"),
        ((403, "text/plain", b"Forbidden"), "refused the request: HTTP 403 forbidden"),
        ((502, "text/plain", b"bad gateway"), "answered HTTP 502"),
    ],
)
def test_a_server_that_is_not_a_usable_prometheus(
    answer: tuple[int, str, bytes], expected: str
) -> None:
    with http_server(answer) as url:
        result = cluster("--prometheus", url, "--json")
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line.startswith(f"gputop: {url}")
    assert expected in line


def test_a_slow_server_times_out() -> None:
    with http_server((200, "application/json", b"{}"), delay=3.0) as url:
        started = time.monotonic()
        result = cluster("--prometheus", url, "--json", "--timeout", "0.5")
        took = time.monotonic() - started
    assert result.returncode == 1
    assert _one_line(result.stderr) == (
        f"gputop: Prometheus at {url} did not answer within 0.5 s (--timeout)"
    )
    assert took < 3.0 + 2.5  # the command's own start-up, not the server's 3 s per query


@pytest.fixture(scope="module")
def proxied() -> Iterator[str]:
    """A real Prometheus (scraping one exposition) behind the auth proxy."""
    with (
        serving([(DCGM / "a100-mig-ub20.prom").read_text()]) as servers,
        running_prometheus([s.target for s in servers]) as prometheus,
        http_server((500, "text/plain", b""), upstream=prometheus.url) as url,
    ):
        prometheus.wait_for("up == 1", 1)
        yield url


def test_401_without_credentials(proxied: str) -> None:
    result = cluster("--prometheus", proxied, "--json")
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line.startswith(f"gputop: {proxied} refused the request: HTTP 401 unauthorized")
    assert "--bearer-token-file" in line


def test_a_bearer_token_from_a_file(proxied: str, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    result = cluster("--prometheus", proxied, "--json", "--bearer-token-file", str(token))
    assert result.returncode == 0, result.stderr
    assert '"host": "ub20-a100-k8s"' in result.stdout


def test_basic_auth_from_the_environment(proxied: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTER_TEST_PASSWORD", BASIC[1])
    result = cluster(
        "--prometheus",
        proxied,
        "--once",
        "--basic-auth-user",
        BASIC[0],
        "--basic-auth-password-env",
        "CLUSTER_TEST_PASSWORD",
    )
    assert result.returncode == 0, result.stderr
    assert "ub20-a100-k8s" in result.stdout
    wrong = cluster("--prometheus", proxied, "--once", "--basic-auth-user", "someone-else",
                    "--basic-auth-password-env", "CLUSTER_TEST_PASSWORD")  # fmt: skip
    assert wrong.returncode == 1
    assert "HTTP 401" in _one_line(wrong.stderr)


def test_credentials_in_the_url_are_used_and_never_shown(proxied: str) -> None:
    user, password = BASIC
    quoted = urllib.parse.quote(password, safe="")
    url = proxied.replace("http://", f"http://{user}:{quoted}@")
    result = cluster("--prometheus", url, "--json")
    assert result.returncode == 0, result.stderr
    refused = cluster("--prometheus", url.replace(user, "nobody"), "--json")
    assert refused.returncode == 1
    assert quoted not in refused.stderr and password not in refused.stderr


def test_no_dcgm_series_is_said() -> None:
    with running_prometheus([]) as prometheus:
        result = cluster("--prometheus", prometheus.url, "--json")
    assert result.returncode == 1
    assert _one_line(result.stderr) == (
        f"gputop: {prometheus.url} has no dcgm-exporter or gputop series"
    )
