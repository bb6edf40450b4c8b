"""The TUI's asyncio without OpenSSL (``gputop.cli.no_tls``): asyncio runs, ``ssl`` is not
loaded by it, and a later ``import ssl`` still gets the real module. Each case runs in a
fresh interpreter, since this test process has loaded both long ago."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from gputop.cli.no_tls import import_asyncio_without_tls

import_asyncio_without_tls()
import asyncio
import asyncio.base_events

loaded_by_asyncio = "ssl" in sys.modules or "_ssl" in sys.modules

async def answer() -> int:
    await asyncio.sleep(0)
    return 42

ran = asyncio.run(answer())
import ssl  # what loads later gets the real module
print(loaded_by_asyncio, asyncio.base_events.ssl is None, ran, hasattr(ssl, "SSLContext"))
"""


def _probe(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_asyncio_runs_without_openssl_and_ssl_still_imports_later() -> None:
    assert _probe(PROBE) == "False True 42 True"


def test_an_asyncio_loaded_before_is_left_as_it_is() -> None:
    code = "import asyncio\n" + PROBE
    assert _probe(code) == "True False 42 True"
