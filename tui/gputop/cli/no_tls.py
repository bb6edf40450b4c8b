"""asyncio loaded for the TUI without OpenSSL.

asyncio imports ``ssl`` for TLS connections it may be asked to make, and importing ``ssl``
loads and initialises OpenSSL: about 4 MiB of RSS for the life of the process (issue 17:
RSS at most 1.5x nvitop's, which uses no asyncio), and time before the first frame. A TUI
over NVML, ``/proc`` or a recording never opens a TLS connection through asyncio, and
asyncio is written to run without ``ssl`` (it imports it in ``try``/``except
ImportError``). So the TUI's start imports asyncio with ``ssl`` made unimportable for just
that moment. Anything that imports ``ssl`` later (a gRPC client, a URL) gets the real
module; only asyncio's own TLS stays off in this process. Subcommands that serve or scrape
over TLS (``serve``, ``export``, ``cluster``) do not call this.
"""

from __future__ import annotations

import sys


def import_asyncio_without_tls() -> None:
    """Import asyncio with ``ssl`` held out; nothing if either is already loaded."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    # A None entry makes `import ssl` raise ImportError, which asyncio takes as "no TLS".
    sys.modules["ssl"] = None  # type: ignore[assignment]
    try:
        # Deferred: this function's point: asyncio imported while ssl cannot be.
        import asyncio  # noqa: F401
    finally:
        if "ssl" in sys.modules and sys.modules["ssl"] is None:
            del sys.modules["ssl"]
