"""How `gputop serve` serves its page (apart from the app it serves)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_VIEWERS = 8
"""--max-viewers: browser connections at once."""


@dataclass(frozen=True, slots=True)
class WebOptions:
    """How the page is served (the part of the command line that is not the app's)."""

    host: str = "127.0.0.1"
    port: int = 8000
    max_viewers: int = DEFAULT_VIEWERS
    auth_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    hide_commands: bool = False
    allow_origins: tuple[str, ...] = ()
    """``--allow-origin``: pages (and ``Host`` names) besides the server's own; ``*``: any."""
