"""`gputop cluster` against servers that misbehave on purpose (issue 26 §4, §6, §7).

Each server is a small socket server on 127.0.0.1 (``support.hostile``): it redirects to
another port and records the headers it is sent, sends a byte a second, its headers slowly
or chunks without end, or answers JSON that is valid but not what Prometheus writes. What
gputop must do: keep credentials home, stop each request at ``--timeout`` in all, quit at
once, and say every odd answer in one line, keeping the last good view.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gputop.cli.cluster import cluster_main
from gputop.sources.prometheus.client import Auth, PrometheusClient, PrometheusError
from gputop.sources.prometheus.direct import DirectFleet, parse_exposition
from gputop.sources.prometheus.source import PrometheusFleet
from support.hostile import Connection, HostileServer, hostile, took

TOKEN = "s3cret-token"
NOW = 1_700_000_000.0
INSTANCE = "node-a:9400"
GPU = {"Hostname": "node-a", "gpu": "0", "UUID": "GPU-a", "modelName": "NVIDIA H200"}


# -- a fake Prometheus that can turn odd -------------------------------------------------


def vector(labels: Any, value: Any, at: Any = NOW) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector",
            "result": [{"metric": labels, "value": [at, value]}]}}  # fmt: skip


class FakePrometheus:
    """Answers what a refresh asks (metric names, ``up``, freshness, two families); after
    ``turn_odd`` its answer to every query is ``odd`` (a document, or raw bytes)."""

    def __init__(self) -> None:
        self.odd: Any = None
        self._scrapes = itertools.count()

    def __call__(self, conn: Connection) -> None:
        request = conn.request
        if request.path.endswith("/label/__name__/values"):
            conn.json({"status": "success", "data": ["DCGM_FI_DEV_GPU_UTIL",
                                                      "DCGM_FI_DEV_POWER_USAGE"]})  # fmt: skip
            return
        query = request.params().get("query", "")
        if query.startswith("up["):
            values = [[NOW - 30, "1"], [NOW - 15, "1"], [NOW, "1"]]
            series = [{"metric": {"instance": INSTANCE}, "values": values}]
            conn.json({"status": "success", "data": {"resultType": "matrix", "result": series}})
            return
        if self.odd is not None:
            odd = self.odd(query) if callable(self.odd) else self.odd
            if odd is not None:
                conn.answer(200, odd if isinstance(odd, bytes) else json.dumps(odd).encode())
                return
        if "timestamp(up)" in query:
            # A newer scrape each refresh, so that each refresh asks every family again.
            at = NOW + next(self._scrapes)
            conn.json(vector({"instance": INSTANCE}, str(at), at))
        elif "POWER_USAGE" in query:
            conn.json(vector({**GPU, "instance": INSTANCE}, "250"))
        else:
            conn.json(vector({**GPU, "instance": INSTANCE}, "50"))


@pytest.fixture
def prometheus() -> Iterator[tuple[FakePrometheus, HostileServer]]:
    fake = FakePrometheus()
    with hostile(fake) as server:
        yield fake, server


def deep(depth: int) -> bytes:
    return b'{"status": "success", "data": ' + b"[" * depth + b"]" * depth + b"}"


ODD_ANSWERS: dict[str, Any] = {
    "deeply nested JSON": deep(200_000),
    "data a list": {"status": "success", "data": []},
    "data a string": {"status": "success", "data": "vector"},
    "result a string": {"status": "success", "data": {"resultType": "vector", "result": "x"}},
    "metric null": vector(None, "1"),
    "metric a string": vector("node-a", "1"),
    "a list-valued label": vector({**GPU, "Hostname": ["node-a", "node-b"]}, "1"),
    "an int label": vector({**GPU, "gpu": 0}, "1"),
    "a label that is a mapping": vector({**GPU, "UUID": {"a": "b"}}, "1"),
    "timestamp 1e300": vector(GPU, "1", 1e300),
    "timestamp NaN": b'{"status": "success", "data": {"resultType": "vector", "result": '
    b'[{"metric": {"gpu": "0"}, "value": [NaN, "1"]}]}}',
    "timestamp -1e12": vector(GPU, "1", -1e12),
    "timestamp a list": vector(GPU, "1", [1]),
    "scalar of odd shape": {"status": "success", "data": {"resultType": "scalar", "result": 1}},
    "an error without text": {"status": "error", "errorType": "bad_data", "error": ""},
    "an error with escapes": {"status": "error", "error": "\x1b]0;pwned\x07\x1b[2Jx\ny"},
}


def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text and "\x1b" not in text and "\x07" not in text
    return lines[0]


@pytest.mark.parametrize("odd", ODD_ANSWERS.values(), ids=ODD_ANSWERS.keys())
def test_an_odd_answer_is_one_line_and_the_last_good_view_is_kept(
    prometheus: tuple[FakePrometheus, HostileServer], odd: Any
) -> None:
    fake, server = prometheus
    fleet = PrometheusFleet(PrometheusClient(server.url, timeout=5))
    try:
        good = fleet.fleet()
        assert good.error is None and [n.host for n in good.nodes] == ["node-a"]
        fake.odd = odd
        for _ in range(2):  # and again: nothing was left half done by the first
            bad = fleet.fleet()
            assert bad.error is not None
            one_line(bad.error)
            assert bad.nodes == good.nodes
    finally:
        fleet.close()


MATRIX_ODD = {
    "data a list": {"status": "success", "data": [1]},
    "data a string": {"status": "success", "data": "matrix"},
    "values a string": {"status": "success", "data": {"resultType": "matrix",
                        "result": [{"metric": GPU, "values": "x"}]}},
    "a time of 1e300": {"status": "success", "data": {"resultType": "matrix",
                        "result": [{"metric": GPU, "values": [[1e300, "1"]]}]}},
    "metric null": {"status": "success", "data": {"resultType": "matrix",
                    "result": [{"metric": None, "values": [[NOW, "1"]]}]}},
}  # fmt: skip


@pytest.mark.parametrize("odd", MATRIX_ODD.values(), ids=MATRIX_ODD.keys())
def test_an_odd_range_answer_is_one_line(odd: Any) -> None:
    with hostile(lambda conn: conn.json(odd)) as server:
        client = PrometheusClient(server.url, timeout=5)
        asks: list[Callable[[], object]] = [
            lambda: client.query_range("up", NOW - 60, NOW, 15),
            lambda: client.query_matrix("up[1m]"),
        ]
        for ask in asks:
            with pytest.raises(PrometheusError) as raised:
                ask()
            assert str(raised.value).startswith(f"{server.url}: ")
            one_line(str(raised.value))


def test_an_odd_scrape_time_is_no_time_and_no_crash(
    prometheus: tuple[FakePrometheus, HostileServer],
) -> None:
    # timestamp(up)'s *value* is a time too: 1e300 there must not reach a date.
    fake, server = prometheus
    fake.odd = lambda q: vector({"instance": INSTANCE}, "1e300") if "timestamp(up)" in q else None
    fleet = PrometheusFleet(PrometheusClient(server.url, timeout=5))
    try:
        answer = fleet.fleet()
    finally:
        fleet.close()
    assert [n.host for n in answer.nodes] == ["node-a"]
    assert answer.nodes[0].newest_sample is None  # no plausible scrape time: unknown


@pytest.mark.parametrize("odd", ["deeply nested JSON", "an int label", "timestamp 1e300"])
def test_cluster_json_says_an_odd_answer_in_one_line(
    prometheus: tuple[FakePrometheus, HostileServer],
    odd: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake, server = prometheus
    fake.odd = ODD_ANSWERS[odd]
    out = io.StringIO()
    assert cluster_main(["--prometheus", server.url, "--json"], out) == 1
    assert out.getvalue() == ""
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"gputop: {server.url}")


def test_an_error_text_from_the_server_is_made_safe(
    prometheus: tuple[FakePrometheus, HostileServer],
) -> None:
    fake, server = prometheus
    fake.odd = ODD_ANSWERS["an error with escapes"]
    with pytest.raises(PrometheusError) as raised:
        PrometheusClient(server.url).query("up")
    assert str(raised.value) == f"{server.url}: error: \\x1b]0;pwned\\x07\\x1b[2Jx"


def test_negative_watts_and_impossible_values_are_unknown(
    prometheus: tuple[FakePrometheus, HostileServer],
) -> None:
    fake, server = prometheus
    fake.odd = lambda q: (
        vector({**GPU, "instance": INSTANCE}, "-250") if "POWER_USAGE" in q
        else vector({**GPU, "instance": INSTANCE}, {"a": 1}) if "avg_over_time" in q
        else vector({**GPU, "instance": INSTANCE}, "1e6") if "last_over_time" in q
        else None
    )  # fmt: skip
    fleet = PrometheusFleet(PrometheusClient(server.url, timeout=5))
    try:
        answer = fleet.fleet()
    finally:
        fleet.close()
    gpu = answer.nodes[0].snapshot.gpus[0]
    assert gpu.power.draw is None  # -250 W
    assert gpu.utilization.gpu is None  # 1e6 %
    assert answer.nodes[0].windows[0].utilization_mean is None  # a value that is a mapping


def test_a_scrape_with_negative_watts_is_unknown() -> None:
    text = (
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",Hostname="n"} -250\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="n"} 900\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="n"} 40\n'
    )
    values = {r.metric: r.value for r in parse_exposition(text, "n:9400")}
    assert math.isnan(values["DCGM_FI_DEV_POWER_USAGE"])
    assert math.isnan(values["DCGM_FI_DEV_GPU_TEMP"])
    assert values["DCGM_FI_DEV_GPU_UTIL"] == 40.0


# -- redirects: credentials stay home (§4) ------------------------------------------------


def redirect_to(target: Callable[[], str], status: int) -> Callable[[Connection], None]:
    def behave(conn: Connection) -> None:
        conn.answer(status, b"", "text/plain", {"Location": target() + conn.request.target})

    return behave


@pytest.mark.parametrize("status", [302, 307])
@pytest.mark.parametrize("auth", ["bearer", "basic", "header", "url"])
def test_a_redirect_to_another_port_gets_no_credentials(status: int, auth: str) -> None:
    fake = FakePrometheus()
    with hostile(fake) as elsewhere, hostile(redirect_to(lambda: elsewhere.url, status)) as home:
        url = home.url
        given = Auth()
        if auth == "bearer":
            given = Auth(bearer_token=TOKEN)
        elif auth == "basic":
            given = Auth(basic=("grafana", TOKEN))
        elif auth == "header":
            given = Auth(headers=(("X-Api-Key", TOKEN),))
        else:
            url = home.url.replace("http://", f"http://grafana:{TOKEN}@")
        client = PrometheusClient(url, given, timeout=3)
        with pytest.raises(PrometheusError) as raised:
            client.label_values("__name__")
        assert home.requests  # the first server was asked, with the credentials
        assert TOKEN in json.dumps(home.requests[0].headers) or auth != "header"
    assert elsewhere.requests == []  # the second one never
    assert str(raised.value) == (
        f"{home.url}: redirected to {elsewhere.url}/api/v1/label/__name__/values, another "
        "server: not followed, so the credentials are not sent there (give that address if "
        "it is the right one)"
    )


def test_a_redirect_without_credentials_is_followed() -> None:
    fake = FakePrometheus()
    with hostile(fake) as elsewhere, hostile(redirect_to(lambda: elsewhere.url, 302)) as home:
        names = PrometheusClient(home.url, timeout=3).label_values("__name__")
        # A 302 to a POST query becomes a GET that still carries the query.
        samples = PrometheusClient(home.url, timeout=3).query("DCGM_FI_DEV_POWER_USAGE")
    assert names == ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"]
    assert samples[0].value == 250.0
    assert [r.method for r in elsewhere.requests] == ["GET", "GET"]


def test_a_redirect_on_the_same_server_keeps_the_credentials() -> None:
    fake = FakePrometheus()

    def behave(conn: Connection) -> None:
        if conn.request.path.startswith("/prometheus/"):
            fake(conn)
        else:
            conn.answer(307, b"", "text/plain", {"Location": "/prometheus" + conn.request.target})

    with hostile(behave) as server:
        client = PrometheusClient(server.url, Auth(bearer_token=TOKEN), timeout=3)
        assert client.label_values("__name__")
    assert [r.headers.get("authorization") for r in server.requests] == [f"Bearer {TOKEN}"] * 2


def test_a_redirect_loop_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with hostile(lambda conn: conn.answer(302, b"", "text/plain", {"Location": "/again"})) as s:
        assert cluster_main(["--prometheus", s.url, "--json"], io.StringIO()) == 1
    line = one_line(capsys.readouterr().err)
    assert line == f"gputop: {s.url}: more than 10 redirects (a redirect loop?)"


# -- a total deadline (§6) ----------------------------------------------------------------


def one_byte_a_second(conn: Connection) -> None:
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999\r\n\r\n")
    conn.trickle(b'{"status": "success", "data": []}', 0.3)


def slow_headers(conn: Connection) -> None:
    conn.send(b"HTTP/1.1 200 OK\r\n")
    conn.trickle(b"X-Slow: yes\r\n", 0.3)


def endless_chunks(conn: Connection) -> None:
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    conn.send(b"Transfer-Encoding: chunked\r\n\r\n")
    while not conn.stopping.wait(0.01) and conn.send(b"2\r\n[ \r\n"):
        pass


def slow_handshake(conn: Connection) -> None:
    # A ServerHello record that never ends: its header, then a byte at a time.
    conn.send(b"\x16\x03\x03\x3f\xff\x02")
    conn.trickle(b"\x00", 0.3)


slow_handshake.raw = True  # type: ignore[attr-defined]


SLOW = {"a byte every 0.3 s": one_byte_a_second, "slow headers": slow_headers,
        "endless chunks": endless_chunks}  # fmt: skip


@pytest.mark.parametrize("behave", SLOW.values(), ids=SLOW.keys())
def test_timeout_is_a_deadline_for_the_whole_request(behave: Callable[[Connection], None]) -> None:
    with hostile(behave) as server:
        client = PrometheusClient(server.url, timeout=1.0)
        started = time.monotonic()
        with pytest.raises(PrometheusError) as raised:
            client.query("up")
        assert took(started) < 1.6
    assert str(raised.value) == f"Prometheus at {server.url} did not answer within 1 s (--timeout)"


def test_timeout_bounds_a_tls_handshake_too() -> None:
    with hostile(slow_handshake) as server:
        client = PrometheusClient(server.url.replace("http:", "https:"), timeout=1.0)
        started = time.monotonic()
        with pytest.raises(PrometheusError, match="did not answer within 1 s"):
            client.query("up")
        assert took(started) < 1.6


def test_targets_have_the_same_deadline() -> None:
    with hostile(one_byte_a_second) as slow, hostile(endless_chunks) as endless:
        urls = [f"{slow.url}/metrics", f"{endless.url}/metrics"]
        fleet = DirectFleet(urls, timeout=1.0)
        started = time.monotonic()
        try:
            answer = fleet.fleet()
        finally:
            fleet.close()
        assert took(started) < 1.6
    assert answer.error is not None
    assert answer.error.startswith("2 of 2 targets: the exporter at")
    assert "did not answer within 1 s (--timeout)" in answer.error


def test_cluster_json_ends_at_its_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    with hostile(one_byte_a_second) as server:
        started = time.monotonic()
        code = cluster_main(["--prometheus", server.url, "--json", "--timeout", "1"])
        assert took(started) < 2.6  # the label and `up` questions side by side, then none
    assert code == 1
    assert "did not answer within 1 s" in one_line(capsys.readouterr().err)


def test_close_aborts_the_requests_in_flight_at_once() -> None:
    # The fleet screen's q: whatever the network does, the source closes in well under 0.5 s.
    with hostile(one_byte_a_second) as server:
        fleet = PrometheusFleet(PrometheusClient(server.url, timeout=60))
        answers: list[Any] = []
        thread = threading.Thread(target=lambda: answers.append(fleet.fleet()), daemon=True)
        thread.start()
        deadline = time.monotonic() + 5
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(server.requests) == 2  # the metric names and `up`, both in flight
        started = time.monotonic()
        fleet.close()
        thread.join(2)
        assert took(started) < 0.5
    assert answers and answers[0].error == f"{server.url}: the request was cancelled"


def test_a_reset_is_one_line() -> None:
    import socket
    import struct

    def reset(conn: Connection) -> None:
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.sock.close()

    with hostile(reset) as server, pytest.raises(PrometheusError) as raised:
        PrometheusClient(server.url, timeout=3).query("up")
    assert str(raised.value) in (
        f"cannot reach Prometheus at {server.url}: Connection reset by peer",
        f"Prometheus at {server.url} closed the connection without an answer",
    )


def test_the_environments_proxy_is_used_as_urllib_used_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePrometheus()
    with hostile(fake) as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        names = PrometheusClient("http://prometheus.invalid:9090", timeout=3).label_values(
            "__name__"
        )
        monkeypatch.setenv("no_proxy", "prometheus.invalid")
        with pytest.raises(PrometheusError, match="cannot reach Prometheus"):
            PrometheusClient("http://prometheus.invalid:9090", timeout=3).label_values("__name__")
    assert names == ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"]
    assert [r.target for r in proxy.requests] == [
        "http://prometheus.invalid:9090/api/v1/label/__name__/values"
    ]
