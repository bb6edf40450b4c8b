"""Where ``gputop serve`` leans on textual-serve's private API or patches it: kept to this
module (``ui/compat.py``'s sibling; ``tests/unit/test_import_hygiene.py`` holds every other
module to textual-serve's public API). Each patch is a ``patches.Patch``, switched as
Textual's are (``GPUTOP_STOCK_TEXTUAL``, the installed release).

The server itself (``web/app_server.py``) subclasses textual-serve's ``Server`` through its
public methods only (``handle_index``, ``handle_websocket``, ``serve``) and builds its own
aiohttp application: textual-serve's ``_make_app`` is never called, so it is not patched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from textual_serve.app_service import AppService

from gputop.patches import Patch, enabled

TEXTUAL_SERVE = "1.1"
"""The textual-serve release series these were written against (1.1.3 tested)."""

PAGE_SESSION = Patch(
    "page_session",
    fixes="textual-serve's page script keeps its terminal session to itself; patched, the "
    "session is window.textualSession (xterm.js), which the browser tests read",
    gain="not a speed patch; stock: the page works the same, its terminal unreachable",
    package="textual-serve",
    written_for=TEXTUAL_SERVE,
)
VIEWER_END = Patch(
    "viewer_end",
    fixes="a viewer's app that does not quit when its browser has gone is killed, and its "
    "pipes closed at once (textual-serve only asks it to quit, and waits for ever)",
    gain="not a speed patch: a bound on what a gone viewer holds (kept with "
    "GPUTOP_STOCK_TEXTUAL=1: it is a security fix, not a speed one)",
    package="textual-serve",
    written_for=TEXTUAL_SERVE,
    kept_in_stock=True,
)
PATCHES: tuple[Patch, ...] = (PAGE_SESSION, VIEWER_END)
"""Every patch of textual-serve, for ``GPUTOP_STOCK_TEXTUAL``'s names and the tests."""

_ANCHOR = "t.forEach((e=>{const t=new w(e,{ping:r});"
"""Where textual-serve's script makes the page's terminal session (textual-serve 1.1)."""
_EXPOSE = _ANCHOR + "window.textualSession=t;"

log = logging.getLogger("gputop.serve")


def patched_script(original: str) -> str:
    """textual-serve's script with its terminal session kept in ``window.textualSession``.

    Raises:
        RuntimeError: the script is not the one this was written for (the tests catch it).
    """
    if _ANCHOR not in original:
        raise RuntimeError("textual-serve's textual.js changed: cannot reach its terminal")
    return original.replace(_ANCHOR, _EXPOSE, 1)


def page_script(original: str) -> str | None:
    """The page's script to serve in place of textual-serve's ``original``: patched
    (``PAGE_SESSION``), or None to serve textual-serve's own."""
    return patched_script(original) if enabled(PAGE_SESSION) else None


class Viewer(AppService):
    """textual-serve's app process of one viewer, which can be ended within a time."""

    ended = False

    async def end(self, wait: float) -> None:
        """Ask the app to quit; kill it if it has not within ``wait`` seconds (``VIEWER_END``;
        without it, only asked). Never raises (but a cancellation, after the kill): what went
        wrong between the app and a browser that has gone is nobody's news."""
        if self.ended:
            return
        killing = enabled(VIEWER_END)
        try:
            await asyncio.wait_for(asyncio.shield(self.stop()), wait if killing else None)
        except (TimeoutError, asyncio.TimeoutError):
            self._kill()
            with contextlib.suppress(Exception):
                await self.stop()
        except asyncio.CancelledError:
            if killing:
                self._kill()
            raise
        except Exception as error:
            if killing:
                self._kill()
            log.warning("a viewer's app ended badly (%s)", type(error).__name__)
        if killing:
            await self._reap()
        self.ended = True

    async def _reap(self) -> None:
        """Close the app's stdin and wait for its exit, so that its pipes are closed now and
        not by the collector after the loop has gone."""
        if self._stdin is not None:
            self._stdin.close()
        if self._process is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._process.wait(), 1.0)

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
