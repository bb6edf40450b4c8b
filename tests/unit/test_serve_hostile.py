"""`gputop serve` against clients that misbehave on purpose (issue 26 §2, §3, §9, "Smaller").

The server is gputop's own (``GputopServer``), on 127.0.0.1 in this process; the app it
starts per browser is a stand-in (``support/fake_viewer.py``) that writes down the size it
was given and each resize. The clients are aiohttp's: a terminal of 100000x100000, a client
that leaves while its app will not quit, pages of other sites and names rebound to
127.0.0.1, a plain ``GET /ws``, messages that are not JSON, a client gone while its app
starts.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import shlex
import socket
import struct
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from gputop.web import app_server
from gputop.web.app_server import GputopServer, OriginPolicy, terminal_size
from gputop.web.options import WebOptions

FAKE = Path(__file__).resolve().parents[1] / "support" / "fake_viewer.py"


class Served:
    def __init__(self, server: GputopServer, test: TestServer, log: Path) -> None:
        self.server, self.test, self.log = server, test, log

    @property
    def port(self) -> int:
        assert self.test.port is not None
        return self.test.port

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def told(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    async def wait_told(self, line: str) -> None:
        deadline = time.monotonic() + 10
        while line not in self.told():
            assert time.monotonic() < deadline, self.told()
            await asyncio.sleep(0.05)


async def serve(
    tmp_path: Path, mode: str = "normal", users: dict[str, str] | None = None, **web: Any
) -> AsyncIterator[Served]:
    log = tmp_path / f"viewer-{mode}.log"
    command = " ".join(shlex.quote(a) for a in [sys.executable, str(FAKE), str(log), mode])
    options = WebOptions(host="127.0.0.1", port=0, **web)
    server = GputopServer(f"exec {command}", web=options, users=users)
    test = TestServer(await server.web_app(), host="127.0.0.1")
    await test.start_server()
    try:
        yield Served(server, test, log)
    finally:
        await test.close()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async for one in serve(tmp_path):
        yield one


@pytest.fixture
def quiet(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING)
    return caplog


def no_traceback(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The log's lines; none carries a traceback."""
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
    assert "Traceback" not in caplog.text
    return [record.getMessage() for record in caplog.records]


# -- §2: sizes and slots ------------------------------------------------------------------


def test_sizes_are_clamped_and_junk_is_the_default() -> None:
    assert terminal_size("100000", "100000") == (1000, 500)
    assert terminal_size(3000, 3000) == (1000, 500)
    assert terminal_size("-5", 0) == (1, 1)
    assert terminal_size("1e9", None) == (80, 24)
    assert terminal_size(float("inf"), float("nan")) == (80, 24)
    assert terminal_size(True, [1]) == (80, 24)
    assert terminal_size("132", "43") == (132, 43)


async def test_a_huge_terminal_and_a_huge_resize_are_clamped(served: Served) -> None:
    async with aiohttp.ClientSession() as session:
        socket = await session.ws_connect(f"{served.base}/ws?width=100000&height=100000")
        await served.wait_told("size 1000 500")
        await socket.send_json(["resize", {"width": 3000, "height": 3000}])
        await served.wait_told("resize 1000 500")
        await socket.close()


async def test_the_slot_is_freed_when_the_client_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_server, "QUIT_WAIT", 0.5)
    async for served in serve(tmp_path, "deaf", max_viewers=1):
        async with aiohttp.ClientSession() as session:
            socket = await session.ws_connect(f"{served.base}/ws?width=80&height=24")
            await served.wait_told("size 80 24")
            async with session.get(served.base + "/") as full:
                assert full.status == 503
            await socket.close()
            # The app will not quit; the slot is free all the same, at once.
            deadline = time.monotonic() + 2
            while served.server.viewers:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            async with session.get(served.base + "/") as page:
                assert page.status == 200
        # And the app that would not quit is killed.
        pid = int(served.told()[0].split()[1])
        deadline = time.monotonic() + 5
        while _alive(pid) or served.server._endings:
            assert time.monotonic() < deadline, "the deaf viewer was not killed"
            await asyncio.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for every purpose here.
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split(")")[-1].split()[0] != "Z"


# -- §3: origins and hosts ----------------------------------------------------------------


async def test_a_page_of_another_site_gets_no_websocket(
    served: Served, quiet: pytest.LogCaptureFixture
) -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(f"{served.base}/ws", headers={"Origin": "http://evil.example"})
        assert refused.value.status == 403
        # The page's own origin, and no origin at all (not a browser), are served.
        for headers in ({"Origin": served.base}, {}):
            socket = await session.ws_connect(f"{served.base}/ws", headers=headers)
            await socket.send_json(["ping", "x"])
            assert await socket.receive_json(timeout=10) == ["pong", "x"]
            await socket.close()
    deadline = time.monotonic() + 10
    while served.told().count("size 80 24") < 2:  # two apps started, not three
        assert time.monotonic() < deadline, served.told()
        await asyncio.sleep(0.05)
    lines = no_traceback(quiet)
    assert any("a websocket from 'http://evil.example'" in line for line in lines)


async def test_a_rebound_host_name_is_refused(
    served: Served, quiet: pytest.LogCaptureFixture
) -> None:
    port = served.port
    async with aiohttp.ClientSession() as session:
        for path in ("/", "/ws", "/static/js/textual.js"):
            async with session.get(
                served.base + path, headers={"Host": f"evil.example:{port}"}
            ) as r:
                assert r.status == 403
                assert "DNS rebinding" in await r.text()
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            async with session.get(served.base + "/", headers={"Host": host}) as answer:
                assert answer.status == 200, host
    no_traceback(quiet)


async def test_allow_origin_names_a_proxy(tmp_path: Path) -> None:
    async for served in serve(tmp_path, allow_origins=("https://gpu.example.com",)):
        async with aiohttp.ClientSession() as session:
            headers = {"Host": "gpu.example.com", "Origin": "https://gpu.example.com"}
            async with session.get(served.base + "/", headers=headers) as page:
                assert page.status == 200
            socket = await session.ws_connect(f"{served.base}/ws", headers=headers)
            await socket.close()
            with pytest.raises(aiohttp.WSServerHandshakeError):
                await session.ws_connect(
                    f"{served.base}/ws", headers={"Origin": "https://other.example.com"}
                )


def test_the_policy_by_listen_address() -> None:
    everywhere = OriginPolicy("0.0.0.0")
    assert everywhere.host_refusal("192.168.1.5:8000") is None
    assert everywhere.host_refusal("localhost:8000") is None
    assert everywhere.host_refusal("attacker.example:8000") is not None
    assert OriginPolicy("gpu-box").host_refusal("GPU-BOX:8000") is None
    assert OriginPolicy("gpu-box").host_refusal("localhost:8000") is not None
    assert OriginPolicy("127.0.0.1", ("*",)).host_refusal("any.example") is None
    policy = OriginPolicy("127.0.0.1")
    assert policy.origin_refusal("http://127.0.0.1:8000", "127.0.0.1:8000", False) is None
    assert policy.origin_refusal("http://127.0.0.1:8001", "127.0.0.1:8000", False) is not None
    assert policy.origin_refusal("null", "127.0.0.1:8000", False) is not None
    assert policy.origin_refusal("https://h", "h", True) is None


# -- §9: junk is one line ------------------------------------------------------------------


async def test_a_plain_get_of_the_socket_is_one_line(
    served: Served, quiet: pytest.LogCaptureFixture
) -> None:
    async with aiohttp.ClientSession() as session, session.get(served.base + "/ws") as answer:
        assert answer.status == 400
        assert "open /" in await answer.text()
    lines = no_traceback(quiet)
    assert len(lines) == 1 and "GET /ws without a websocket handshake" in lines[0]


async def test_a_message_that_is_not_json_keeps_the_viewer(
    served: Served, quiet: pytest.LogCaptureFixture
) -> None:
    async with aiohttp.ClientSession() as session:
        socket = await session.ws_connect(f"{served.base}/ws")
        for junk in ("not json", "{}", '["resize", "x"]', "[]", '["stdin"]', "[" * 100_000):
            await socket.send_str(junk)
        await socket.send_json(["ping", "still here"])
        assert await socket.receive_json(timeout=10) == ["pong", "still here"]
        await socket.close()
    lines = no_traceback(quiet)
    assert lines == ["a viewer sent a message that is not the page's: ignored"]


def _upgrade_then_reset(port: int, delay: float) -> None:
    """A websocket handshake sent, then a reset (not a close) after ``delay`` seconds."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET /ws?width=80&height=24 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    time.sleep(delay)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


async def test_a_client_gone_while_its_viewer_starts_is_one_line_and_frees_its_slot(
    tmp_path: Path, quiet: pytest.LogCaptureFixture
) -> None:
    async for served in serve(tmp_path, "slow"):
        # From another thread, so that the server runs while the client goes: during the
        # handshake, just after it, while the app starts.
        for delay in (0.0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.3):
            await asyncio.to_thread(_upgrade_then_reset, served.port, delay)
            await asyncio.sleep(0.1)
        deadline = time.monotonic() + 5
        while served.server.viewers:
            assert time.monotonic() < deadline, "a slot was kept by a client that had gone"
            await asyncio.sleep(0.05)
    for line in no_traceback(quiet):
        assert "\n" not in line


# -- "Smaller": the basic scheme in any case ------------------------------------------------


@pytest.mark.parametrize("scheme", ["Basic", "basic", "BASIC"])
async def test_basic_auth_in_any_case(tmp_path: Path, scheme: str) -> None:
    token = base64.b64encode(b"alice:s3cret").decode()
    async for served in serve(tmp_path, users={"alice": "s3cret"}):
        async with aiohttp.ClientSession() as session:
            headers = {"Authorization": f"{scheme} {token}"}
            async with session.get(served.base + "/", headers=headers) as page:
                assert page.status == 200
            async with session.get(
                served.base + "/", headers={"Authorization": f"{scheme} x"}
            ) as no:
                assert no.status == 401


def test_allow_origin_takes_origins_only() -> None:
    from gputop.cli.serve import parse_serve
    from gputop.errors import BadArguments

    request = parse_serve(["--allow-origin", "https://gpu.example.com", "--allow-origin", "*"])
    assert request.web.allow_origins == ("https://gpu.example.com", "*")
    for bad in ("gpu.example.com", "ftp://h", "https://h/path", "https://h:port"):
        with pytest.raises(BadArguments, match="--allow-origin"):
            parse_serve(["--allow-origin", bad])
